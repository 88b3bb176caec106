#!/usr/bin/env bash
# cuzk's pipelined 32 GiB PoRep C2 on the GPU machine, on the synthetic input Bellhop's
# 32 GiB runs use (issue 33, item 7; docs/BENCHMARKS.md), beside them in one lease.
# The synthetic C1 output and parameters are made once in WORK (porep32-inputs.sh), shared
# with porep32-sim.sh and porep32-daemon.sh; cuzk-daemon and cuzk-bench come in the bundle
# (`CUZK=daemon scripts/gpu-bundle.sh`).
#
#   WORK=/tmp/p32b OUT=$OUT .device-bundle/porep32-cuzk.sh
#
# On the device only, in WORK/cuzk (never a parameter cache):
# - the synthetic parameters, hard-linked under the published 32 GiB PoRep file name;
# - the synthetic C1 in filecoin-proofs-api's form (its registered proof, StackedDrg32GiBV1_1,
#   and its vanilla proofs tagged with the sector shape), wrapped as Curio sends it. This
#   copy has lost the file's synthetic notice, so it lives and dies in that scratch directory.
# cuzk's config is its example's defaults but for the address, the parameter directory and
# the memory budget (TOTAL_BUDGET, 110GiB of the machine's 125). cuzk extracts its PCE in
# the background on its first PoRep whatever the config says; CUZK_DISABLE_PCE=1 keeps it
# from being used, and a directory in the way of its 25 GB file keeps it off the disk. So:
# preload the SRS, a warm-up proof, then PROOFS (1) timed proofs, each one job at a time.
# cuzk ends every such job FAILED, after proving, at its self-check (the synthetic proof
# does not verify); its log's "proof assembled" line, written before the check, has the time.
# The whole run is bounded by LIMIT seconds (1500); it runs in a session of its own that
# outlives a call, and called again with the same WORK it only waits, up to WAIT (560), then
# copies what there is to OUT as one archive (cuzk.tgz).
set -euo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
work="${WORK:?set WORK to a directory kept between calls}"
out="${OUT:?set OUT to where results go}"
run="$work/cuzk"
addr=127.0.0.1:9820
published=v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820.params
log() { echo "== $(date -u +%H:%M:%S) $*"; }

if [[ "${1:-}" == --session ]]; then
    "$bundle/porep32-inputs.sh" "$work" 32GiB params
    mkdir -p "$run/params/pce-porep-32g.tmp"
    ln -f "$work/bellhop-synthetic-porep-32GiB.params" "$run/params/$published"
    python3 - "$work/c1-32GiB.json" "$run/c1-curio.json" <<'EOF'
import base64, json, sys
c1 = json.load(open(sys.argv[1]))["c1"]
c1["registered_proof"] = "StackedDrg32GiBV1_1"
c1["vanilla_proofs"] = {"StackedDrg32GiBV1": c1["vanilla_proofs"]}
phase1 = base64.b64encode(json.dumps(c1).encode()).decode()
json.dump({"SectorNum": 1, "Phase1Out": phase1, "SectorSize": 32 << 30}, open(sys.argv[2], "w"))
EOF
    cat >"$run/cuzk.toml" <<EOF
[daemon]
listen = "$addr"
[srs]
param_cache = "$run/params"
[memory]
total_budget = "${TOTAL_BUDGET:-110GiB}"
[scheduler]
max_batch_size = 1
EOF
    nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 500 >"$run/gpu-memory.csv" &
    sampler=$!
    CUZK_DISABLE_PCE=1 FIL_PROOFS_PARAMETER_CACHE="$run/params" RUST_LOG=info \
        "$bundle/cuzk-daemon" --config "$run/cuzk.toml" >"$run/daemon.out" 2>"$run/daemon.log" &
    daemon=$!
    bench() { "$bundle/cuzk-bench" --addr "http://$addr" "$@"; }
    for _ in $(seq 600); do bench status >/dev/null 2>&1 && break; kill -0 $daemon || break; sleep 0.5; done
    # Each step logs its name and cuzk-bench's output, then adds to walls.txt its wall
    # seconds as cuzk-bench saw them and the daemon's peak RSS so far.
    step() {
        local name=$1 t0
        shift
        t0=$(date +%s.%N)
        log "$name"
        bench "$@" || true
        echo "$name $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" >>"$run/walls.txt"
        grep VmHWM "/proc/$daemon/status" | sed "s/^/$name /" >>"$run/walls.txt" || true
    }
    step preload preload -c porep-32g
    step warm-up single -t porep --c1 "$run/c1-curio.json"
    for i in $(seq "${PROOFS:-1}"); do step "proof-$i" single -t porep --c1 "$run/c1-curio.json"; done
    kill $daemon $sampler 2>/dev/null || true
    exit 0
fi

if [[ ! -f "$run/started" ]]; then
    mkdir -p "$run" && touch "$run/started"
    setsid bash -c "timeout -k 10 ${LIMIT:-1500} '$0' --session >'$run/session.log' 2>&1; echo \$? >'$run/rc'
        pkill -f '$bundle/cuzk-daemon' || true" </dev/null >/dev/null 2>&1 &
fi
deadline=$((SECONDS + ${WAIT:-560}))
while [[ ! -f "$run/rc" && $SECONDS -lt $deadline ]]; do sleep 5; done
tar -czf "$out/cuzk.tgz" -C "$run" --exclude=params --exclude=c1-curio.json .
tail -n 20 "$run/session.log"
cat "$run/walls.txt" 2>/dev/null || true
grep -E "proof assembled|self-check|CUZK_TIMING: .*gpu_total|error|panicked" "$run/daemon.log" 2>/dev/null | tail -n 12 || true
[[ -f "$run/rc" ]] && echo "== ended with status $(cat "$run/rc")" || echo "== still running: call again with the same WORK"
