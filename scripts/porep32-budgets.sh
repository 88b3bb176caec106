#!/usr/bin/env bash
# The 32 GiB PoRep C2 by simulation within GPU memory budgets, on the GPU machine
# (docs/BENCHMARKS.md, "32 GiB PoRep within a GPU memory budget"): porep32-sim.sh runs in
# a row, in one session of its own that outlives a call, with the production settings
# (pce, lookahead 1, host memory budget 120GiB, register_host_memory, malloc on huge pages)
# and the bench's parameters in memory:
# 1. resident: no device_memory (the card's free memory), pce recording its cache in the
#    warm-up; 2. with BEFORE (a directory of an earlier build's plugins) or BEFORE_OPTIONS
#    (lines added to [backend.options], e.g. lock_each_proof = true), the same run with
#    those plugins or options, for a ratio from the same lease; 3. then one run with
#    device_memory = each of BUDGETS (20GiB 12GiB). Runs after the first replay pce's
#    cache. The GPU's memory is sampled every 200 ms throughout.
#
#   WORK=/tmp/p32b OUT=$OUT .device-bundle/porep32-budgets.sh
#
# Called again with the same WORK, it only waits: up to WAIT seconds (560), then copies
# what has ended to OUT. RUNS (3) sustained proofs after one warm-up, each run.
set -euo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
work="${WORK:?set WORK to a directory kept between calls}"
out="${OUT:?set OUT to where results go}"
mkdir -p "$work/out" "$out"

if [[ ! -f "$work/started" ]]; then
    touch "$work/started"
    setsid bash -c "
        nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 200 >'$work/out/gpu-memory.csv' &
        sampler=\$!
        run() { WORK='$work' OUT='$work/out' STRATEGY=pce BUDGET=120GiB LOOKAHEAD=1 RUNS=${RUNS:-3} WARMUP=1 \
            PARAMS=memory WAIT=100000 GLIBC_TUNABLES=glibc.malloc.hugetlb=1 '$bundle/porep32-sim.sh'; }
        { date -u +%s; NAME=resident BACKEND_OPTIONS='register_host_memory = true' run
          if [[ -n '${BEFORE:-}${BEFORE_OPTIONS:-}' ]]; then
              date -u +%s; NAME=before-resident PLUGIN_DIR='${BEFORE:-}' BACKEND_OPTIONS=\"register_host_memory = true
${BEFORE_OPTIONS:-}\" run
          fi
          for budget in ${BUDGETS-20GiB 12GiB}; do
              date -u +%s; NAME=budget-\$budget BACKEND_OPTIONS=\"register_host_memory = true
device_memory = '\$budget'\" run
          done
          date -u +%s; } >'$work/out/sequence.log' 2>&1
        kill \$sampler; touch '$work/ended'" </dev/null >/dev/null 2>&1 &
fi

deadline=$((SECONDS + ${WAIT:-560}))
while [[ ! -f "$work/ended" && $SECONDS -lt $deadline ]]; do sleep 5; done
# One archive: a call brings back a limited number of files.
tar -czf "$out/budgets.tgz" -C "$work/out" .
tail -n 30 "$work/out/sequence.log"
[[ -f "$work/ended" ]] && echo "== all runs ended" || echo "== still running: call again with the same WORK"
