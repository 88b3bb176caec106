#!/usr/bin/env bash
# The 32 GiB PoRep C2 by simulation through the daemon, on the GPU machine (issue 33: the
# daemon at the bench's speed; docs/BENCHMARKS.md): `bellhop serve` with `[daemon]
# synthetic_benchmarks = true` proves synthetic-porep:SIZE from a PoRep request in Curio's
# shape (`bellhop fil request`): one job first (pce records its cache), then COUNT (4) jobs
# at once. Its settings are porep32-sim.sh's production ones (pce, lookahead 1, memory
# budget 120GiB, register_host_memory, malloc on huge pages; the daemon's own synthesis
# workers, or WORKERS), so that its s/proof and memory stand beside the bench's; unlike
# the bench it reads the synthetic parameters from a file, made once in WORK (about 47 GB
# at 32 GiB). The benchmark's jobs complete without a proof. Its JSON status (memory
# budget, parameters, kept host memory) is saved after each step, from loopback.
#
#   WORK=/tmp/p32d OUT=$OUT .device-bundle/porep32-daemon.sh
#
# It runs in a session of its own that outlives a call; called again with the same WORK it
# only waits, up to WAIT seconds (560), then copies what there is to OUT as one archive.
# SIZE (32GiB), BACKEND (cuda), COUNT, BUDGET, WORKERS, BATCH (`[pipeline] batch`, 1; a
# run with another batch has a directory of its own), STATUS_PORT (9821, on 127.0.0.1);
# SIZE=2KiB BACKEND=cpu checks it anywhere. On a machine with two GPUs the daemon proves
# on both (`[backend] devices` left out: every GPU).
set -euo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
bh="$bundle/bellhop"
work="${WORK:?set WORK to a directory kept between calls}"
size="${SIZE:-32GiB}"
run="$work/daemon-$size${BATCH:+-batch$BATCH}"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

if [[ "${1:-}" == --session ]]; then
    config="$run/bellhop.toml"
    socket="$run/bellhop.sock"
    cat >"$config" <<EOF
[params]
dir = "$work"
[backend]
plugin = "${BACKEND:-cuda}"
[synthesis]
strategy = "pce"
[synthesis.options]
cache_dir = "$work/pce"
[pipeline]
lookahead = 1
batch = ${BATCH:-1}
[memory]
budget = "${BUDGET:-120GiB}"
[daemon]
listen = "unix://$socket"
status_listen = "127.0.0.1:${STATUS_PORT:-9821}"
state_dir = "$run/state"
synthetic_benchmarks = true
EOF
    if [[ -n "${WORKERS:-}" ]]; then sed -i "/^\[daemon\]/a synthesis_workers = $WORKERS" "$config"; fi
    if [[ "${BACKEND:-cuda}" == cuda ]]; then printf '[backend.options]\nregister_host_memory = true\n' >>"$config"; fi
    "$bundle/porep32-inputs.sh" "$work" "$size" params
    "$bh" --config "$config" fil request "synthetic-porep:$size" --input "$work/c1-$size.json" --out "$run/request.json"
    python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1])) * int(sys.argv[2]), open(sys.argv[3], "w"))' \
        "$run/request.json" "${COUNT:-4}" "$run/requests.json"

    log "bellhop serve, $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$bh" --config "$config" serve >"$run/serve.out" 2>"$run/serve.log" &
    daemon=$!
    trap 'kill -TERM $daemon 2>/dev/null; wait $daemon; touch "$run/ended"' EXIT
    # Every 5 s: seconds, the daemon's RSS (bytes), GPU memory in use (MiB).
    while kill -0 $daemon 2>/dev/null; do
        rss=$(ps -o rss= -p $daemon 2>/dev/null || echo 0)
        gpu=$(nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null || echo 0)
        echo "$(date +%s) $((rss * 1024)) $gpu"
        sleep 5
    done >"$run/memory" &
    for _ in $(seq 600); do
        grep -q "gRPC on" "$run/serve.out" 2>/dev/null && break
        kill -0 $daemon 2>/dev/null || { log "the daemon did not start"; exit 1; }
        sleep 1
    done
    client() { "$bh" client --addr "unix://$socket" "$@"; }
    status_json() {
        python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' \
            "http://127.0.0.1:${STATUS_PORT:-9821}/status" >"$run/status-$1.json" || log "no JSON status"
    }
    log "one job (pce records its cache)"
    client prove --requests "$run/request.json" --request-id first | tee "$run/first.txt"
    status_json first
    log "${COUNT:-4} jobs at once"
    client prove --requests "$run/requests.json" --request-id sustained | tee "$run/sustained.txt"
    client status >"$run/status.txt"
    status_json sustained
    # Each job's total is from its submission, and all were submitted together: the jobs
    # after the first to end took (last - first) / (COUNT - 1) each.
    sed -n 's/.*total \([0-9]*\) ms.*/\1/p' "$run/sustained.txt" | sort -n | awk '
        { t[NR] = $1 } END { if (NR > 1) printf "sustained: %.1f s a proof over %d jobs after the first to end (%.1f s)\n",
            (t[NR] - t[1]) / 1000 / (NR - 1), NR - 1, t[1] / 1000 }' | tee "$run/summary.txt"
    awk '$2 > r { r = $2 } $3 > g { g = $3 } END { printf "largest sampled RSS %.1f GiB, GPU memory %.1f GiB\n",
        r / 2^30, g / 1024 }' "$run/memory" | tee -a "$run/summary.txt"
    exit 0
fi

out="${OUT:?set OUT to where results go}"
mkdir -p "$run" "$out"
if [[ ! -f "$run/started" ]]; then
    touch "$run/started"
    setsid "$0" --session >"$run/session.log" 2>&1 </dev/null &
fi
deadline=$((SECONDS + ${WAIT:-560}))
while [[ ! -f "$run/ended" && $SECONDS -lt $deadline ]]; do sleep 5; done
tar -czf "$out/daemon-$size${BATCH:+-batch$BATCH}.tgz" -C "$run" --exclude state --exclude bellhop.sock --exclude 'request*.json' .
tail -n 20 "$run/session.log"
[[ -f "$run/ended" ]] && echo "== ended" || echo "== still running: call again with the same WORK"
