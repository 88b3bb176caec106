#!/usr/bin/env bash
# On the GPU machine, from a bundle made by scripts/gpu-bundle.sh (TESTS=1, PLUGINS with
# cuda): the cuda backend's GPU tests (conformance with the bases resident and streamed),
# then CIRCUIT proved with the bases resident (A) against a `device_memory` budget too small
# to keep them (B, streamed in chunks) in one `bellhop ab` run, then B alone in `bellhop
# bench` with the GPU's memory sampled every 100 ms (its peak, the CUDA context included).
#
#   .device-bundle/streamed-bases.sh [BUNDLE]
#
# Environment: CIRCUIT (default chain:262000, a 2^18 domain), BUDGET (default 720MiB: the
# budget counts the CUDA context, about 690 MiB on an H200, so 32 MiB are left to Bellhop),
# RUNS (default 15), WORK (parameters; default a new temporary directory), OUT.
set -euo pipefail
bundle="$(cd "${1:-$(dirname "$0")}" && pwd)"
out="${OUT:-streamed-bases-out}"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$out" "$work"
export BELLHOP_PLUGIN_DIR="$bundle" BELLHOP_REQUIRE_GPU=1
chmod go-w "$bundle"/*.so 2>/dev/null || true
bh="$bundle/bellhop"
circuit="${CIRCUIT:-chain:262000}"
budget="${BUDGET:-720MiB}"
config="$work/bellhop.toml"
printf '[params]\ndir = "%s"\n[backend]\nplugin = "cuda"\n' "$work/params" >"$config"
streamed="$work/bellhop-streamed.toml"
printf '[backend.options]\ndevice_memory = "%s"\n' "$budget" | cat "$config" - >"$streamed"
echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"

echo "== the cuda backend's GPU tests"
"$bundle/cuda-gpu-tests" --test-threads 1 >"$out/cuda-gpu-tests.txt" 2>&1 || { cat "$out/cuda-gpu-tests.txt"; exit 1; }
grep -E "^test |test result" "$out/cuda-gpu-tests.txt"

[[ -f "$("$bh" --config "$config" params path "$circuit")" ]] || "$bh" --config "$config" params gen "$circuit"

echo "== $circuit: bases resident (A) against device_memory = $budget (B), one process"
"$bh" --config "$config" ab "$circuit" --b "$streamed" --runs "${RUNS:-15}" --report "$out/ab" 2>&1 |
    tee "$out/ab.txt"

echo "== $circuit with device_memory = $budget alone, the GPU's memory sampled"
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 100 >"$out/gpu-memory.csv" &
sampler=$!
sleep 1
"$bh" --config "$streamed" bench "$circuit" --runs 5 2>&1 |
    tee "$out/bench-streamed.txt"
sleep 1
kill "$sampler"
awk -F', ' 'NR == 1 { idle = $2 } { if ($2 > peak) peak = $2 }
    END { printf "GPU memory: %d MiB before the run, %d MiB at its peak (the CUDA context included)\n", idle, peak }' \
    "$out/gpu-memory.csv" | tee "$out/gpu-memory-peak.txt"
