#!/usr/bin/env bash
# Every fuzz target under libFuzzer for N seconds (default 60), JOBS at a time (default 2,
# one per core here). Seeds come from fuzz/corpus/<target> (committed); what libFuzzer
# finds goes to $WORK/corpus/<target>, crashes to fuzz/artifacts/<target>, logs and a
# summary (runs, executions per second, crashes) to $WORK. Installs cargo-fuzz if missing;
# uses the nightly toolchain where there is one (libFuzzer's instrumentation needs it).
# A crash found becomes a regression test: add its input to fuzz/corpus/<target>, which
# the tests of fuzz-targets run in CI.
#
#   scripts/fuzz.sh 600                     # 10 minutes each
#   TARGETS=config scripts/fuzz.sh 30
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets="${TARGETS:-params_file filecoin_input config submit_request}"
work="${WORK:-target/fuzz-work}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
toolchain=()
rustup toolchain list 2>/dev/null | grep -q '^nightly' && toolchain=(+nightly)
# Safe Rust throughout what is fuzzed: the search is for panics, so no sanitizer, but
# debug assertions on (overflow checks included).
fuzz=(cargo "${toolchain[@]}" fuzz)
flags=(--sanitizer none --debug-assertions --fuzz-dir fuzz)
"${fuzz[@]}" build "${flags[@]}"

run() {
    local target=$1
    mkdir -p "$work/corpus/$target"
    "${fuzz[@]}" run "${flags[@]}" "$target" "$work/corpus/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 >"$work/$target.log" 2>&1
}
status=0
pids=()
for target in $targets; do
    while (( $(jobs -rp | wc -l) >= ${JOBS:-2} )); do sleep 1; done
    run "$target" &
    pids+=("$!")
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done

printf '%-16s %10s %12s %9s %8s\n' target seconds executions "exec/s" crashes | tee "$work/summary.txt"
for target in $targets; do
    log="$work/$target.log"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    crashes=$(ls "fuzz/artifacts/$target" 2>/dev/null | grep -c '^crash-\|^oom-\|^timeout-' || true)
    printf '%-16s %10s %12s %9s %8s\n' "$target" "$seconds" "${runs:-?}" "${rate:-?}" "$crashes" | tee -a "$work/summary.txt"
    [[ "$crashes" == 0 && -n "$runs" ]] || status=1
done
exit $status
