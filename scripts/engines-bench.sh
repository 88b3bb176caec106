#!/usr/bin/env bash
# Bellhop's daemon and cuzk's, one after the other, on this machine's GPU with the same
# client, jobs, parameter directory and port: cuzk's own client (cuzk-bench) drives both.
# Per daemon and kind: the first proof after the daemon starts, proofs per minute sustained
# (COUNT at once, after a first proof of the kind), per-proof latency p50/p99, a WinningPoSt
# submitted behind BACKLOG PoRep C2 jobs, peak RSS and peak GPU memory, and whether
# filecoin-proofs' verifiers accept every proof of a second batch of COUNT (cuzk-bench
# returns none, so these are fetched with `bellhop client`, which speaks to both daemons).
# Sizes are those the inputs were made for (daemon-e2e.sh's SIZE). Each daemon's figures
# are kept apart, so DAEMONS=cuzk in a later call of one lease adds to the same table.
# Loopback only.
#
#   INPUTS=WORK/daemon .device-bundle/engines-bench.sh   # the inputs scripts/daemon-e2e.sh made
#
# Environment: BELLHOP, CUZK_DAEMON, CUZK_BENCH (binaries; default: beside this script),
# INPUTS (a daemon-e2e.sh work directory: sector, requests, bellhop.toml), PARAMS,
# DAEMONS (default "bellhop cuzk"), CIRCUITS (default "porep snap winning-post window-post"),
# COUNT (default 8), BACKLOG (default 4), BACKEND (default cuda), WORKERS, WORK.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bh="$(realpath "${BELLHOP:-$here/bellhop}")"
cuzk_daemon="$(realpath "${CUZK_DAEMON:-$here/cuzk-daemon}")"
cuzk_bench="$(realpath "${CUZK_BENCH:-$here/cuzk-bench}")"
inputs="$(cd "${INPUTS:?INPUTS names the work directory of daemon-e2e.sh}" && pwd)"
params="$(cd "${PARAMS:-$inputs/../filecoin-params}" && pwd)"
work="${WORK:-$inputs/../engines}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
count="${COUNT:-8}"
backlog="${BACKLOG:-4}"
circuits="${CIRCUITS:-porep snap winning-post window-post}"
addr=127.0.0.1:9820
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
exec > >(tee -a "$work/log.txt") 2>&1
echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores; $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"

# The largest GPU memory the process `$1` held, sampled until it exits, into file `$2`.
sample_gpu() {
    local pid=$1 out=$2 peak=0 used
    while kill -0 "$pid" 2>/dev/null; do
        used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
            awk -F', ' -v p="$pid" '$1 == p { print $2 }' | head -1)
        [[ -n "$used" && "$used" -gt "$peak" ]] && peak=$used && echo "$peak" >"$out"
        sleep 0.5
    done
}

start_daemon() {
    local daemon=$1 dir="$work/$1"
    mkdir -p "$dir"
    case $daemon in
        bellhop)
            printf '[params]\ndir = "%s"\n[backend]\nplugin = "%s"\n[daemon]\nlisten = "%s"\nstatus_listen = ""\nstate_dir = "%s"\nsynthesis_workers = %s\n' \
                "$params" "${BACKEND:-cuda}" "$addr" "$dir/state" "${WORKERS:-4}" >"$dir/config.toml"
            "$bh" --config "$dir/config.toml" serve >"$dir/out.txt" 2>"$dir/daemon.log" &
            ;;
        cuzk)
            # cuzk's pipelined engine is built for 32 GiB circuits only; smaller sectors go
            # through its monolithic path (filecoin-proofs-api with supraseal-c2).
            printf '[daemon]\nlisten = "%s"\n[srs]\nparam_cache = "%s"\n[pipeline]\nenabled = false\n' \
                "$addr" "$params" >"$dir/config.toml"
            FIL_PROOFS_PARAMETER_CACHE="$params" "$cuzk_daemon" --config "$dir/config.toml" >"$dir/out.txt" 2>"$dir/daemon.log" &
            ;;
    esac
    pid=$!
    sample_gpu "$pid" "$dir/gpu-peak-mib" &
    for _ in $(seq 300); do
        "$cuzk_bench" --addr "http://$addr" status >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || { tail -20 "$dir/daemon.log"; return 1; }
        sleep 0.2
    done
    echo "$daemon did not answer"
    return 1
}

stop_daemon() {
    local daemon=$1 dir="$work/$1"
    grep -E "VmHWM" "/proc/$pid/status" | awk '{ print $2 * 1024 }' >"$dir/peak-rss-bytes" || true
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
}

# A bench stopped early (a time bound, ^C) stops the daemon it started, which would
# otherwise hold the port for the next one.
pid=""
trap '[[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null; exit 130' INT TERM
status=0
for daemon in ${DAEMONS:-bellhop cuzk}; do
    echo "== $daemon"
    dir="$work/$daemon"
    rm -rf "$dir"
    mkdir -p "$dir"
    results="$dir/results.tsv"
    t0=$(now)
    start_daemon "$daemon" || { status=1; continue; }
    first_circuit=1
    for circuit in $circuits; do
        mapfile -t args < <("$here/cuzk-bench-args.py" "$inputs/$circuit.requests.json" "$circuit" "$work")
        "$cuzk_bench" --addr "http://$addr" single "${args[@]}" >"$dir/$circuit.single.txt" 2>&1 || true
        if [[ $first_circuit == 1 ]]; then
            echo "first proof ($circuit) after the daemon's start: $(since "$t0") s" | tee "$dir/first.txt"
            first_circuit=0
        fi
        first=$(sed -n 's/^wall time: *\([0-9]*\) ms/\1/p' "$dir/$circuit.single.txt" | awk '{ printf "%.3f", $1 / 1000 }')
        "$cuzk_bench" --addr "http://$addr" batch "${args[@]}" -c "$count" -j "$count" >"$dir/$circuit.batch.txt" 2>&1 || true
        per_minute=$(sed -n 's/^throughput: *\([0-9.]*\) proofs\/min.*/\1/p' "$dir/$circuit.batch.txt")
        read -r p50 p99 < <(grep -oE 'COMPLETED — [0-9.]+s' "$dir/$circuit.batch.txt" | grep -oE '[0-9.]+' | sort -n |
            awk '{ v[NR] = $1 } END { if (NR) printf "%.3f %.3f\n", v[int((NR - 1) * 0.5) + 1], v[int((NR - 1) * 0.99 + 0.5) + 1]; else print "- -" }')
        completed=$(sed -n 's/^completed: *\([0-9]*\)/\1/p' "$dir/$circuit.batch.txt")
        [[ "$completed" == "$count" ]] || { echo "$daemon $circuit: $completed of $count completed"; status=1; }
        # COUNT more at once, every proof checked by filecoin-proofs.
        sector_arg=()
        [[ $circuit == porep ]] && sector_arg=(--sector "$(cat "$inputs/porep.sector-dir")")
        python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1])) * int(sys.argv[2]), open(sys.argv[3], "w"))' \
            "$inputs/$circuit.requests.json" "$count" "$dir/$circuit.many.json"
        verdict="none of $count verified"
        if "$bh" client --addr "$addr" prove --requests "$dir/$circuit.many.json" --out "$dir/$circuit.proofs" \
            >"$dir/$circuit.verify-batch.txt" 2>&1; then
            "$bh" --config "$inputs/bellhop.toml" fil verify "$(cat "$inputs/$circuit.spec")" --count "$count" \
                --input "$inputs/$circuit.json" --proof "$dir/$circuit.proofs" "${sector_arg[@]}" >"$dir/$circuit.verify.txt" || true
            grep -q "accepted by" "$dir/$circuit.verify.txt" && verdict="all $count accepted"
        fi
        [[ $verdict == "all $count accepted" ]] || status=1
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$daemon" "$(cat "$inputs/$circuit.spec")" "$first" "$per_minute" "$p50" "$p99" "$verdict" >>"$results"
    done
    if [[ " $circuits " == *" porep "* && " $circuits " == *" winning-post "* ]]; then
        mapfile -t porep_args < <("$here/cuzk-bench-args.py" "$inputs/porep.requests.json" porep "$work")
        mapfile -t winning_args < <("$here/cuzk-bench-args.py" "$inputs/winning-post.requests.json" winning-post "$work")
        "$cuzk_bench" --addr "http://$addr" batch "${porep_args[@]}" -c "$backlog" -j "$backlog" >"$dir/backlog.txt" 2>&1 &
        backlog_pid=$!
        sleep 0.5
        "$cuzk_bench" --addr "http://$addr" single "${winning_args[@]}" >"$dir/winning-under-backlog.txt" 2>&1 || status=1
        wait "$backlog_pid" || status=1
        echo "WinningPoSt behind $backlog PoRep C2 jobs: $(sed -n 's/^wall time: *//p' "$dir/winning-under-backlog.txt")" |
            tee "$dir/winning-under-backlog.summary"
    fi
    stop_daemon "$daemon"
done

echo "== summary: $count proofs at once per kind, after a first one; wall times seen by cuzk-bench"
python3 - "$work" <<'PY'
import csv, os, sys
work = sys.argv[1]
fields = ["daemon", "kind", "first_s", "per_minute", "p50_s", "p99_s", "verified"]
rows = [r for daemon in ("bellhop", "cuzk") if os.path.exists(os.path.join(work, daemon, "results.tsv"))
        for r in csv.DictReader(open(os.path.join(work, daemon, "results.tsv")), fieldnames=fields, delimiter="\t")]
def read(daemon, name, default="-"):
    path = os.path.join(work, daemon, name)
    return open(path).read().strip() if os.path.exists(path) else default
print(f"{'daemon':<8} {'kind':<13} {'first s':>8} {'proofs/min':>11} {'p50 s':>7} {'p99 s':>7}  verified by filecoin-proofs")
for r in rows:
    print(f"{r['daemon']:<8} {r['kind']:<13} {r['first_s']:>8} {r['per_minute']:>11} {r['p50_s']:>7} {r['p99_s']:>7}  {r['verified']}")
for daemon in sorted({r["daemon"] for r in rows}):
    rss = read(daemon, "peak-rss-bytes", "0")
    print(f"{daemon}: peak RSS {int(rss or 0) / 2**30:.2f} GiB, peak GPU memory {read(daemon, 'gpu-peak-mib', '0')} MiB; "
          f"{read(daemon, 'first.txt')}; {read(daemon, 'winning-under-backlog.summary')}")
PY
exit $status
