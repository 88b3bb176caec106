#!/usr/bin/env bash
# The first proof of a fresh process, on the GPU machine, from a bundle made by
# scripts/gpu-bundle.sh: `bellhop prove chain:2^LOG2` (LOG2=20) on BACKEND (cuda), process
# start to its verified proof, RUNS (3) times. OTHER names a second bellhop binary (e.g. an
# earlier build) run alternately with the bundle's, so the two are compared in one call.
# Parameters are made once in WORK (kept between calls); results go to OUT.
set -euo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
work="${WORK:?set WORK to a directory kept between calls}"
out="${OUT:?set OUT to where results go}"
mkdir -p "$work" "$out"
export BELLHOP_PLUGIN_DIR="$bundle"
chmod go-w "$bundle"/*.so 2>/dev/null || true
circuit="chain:$((1 << ${LOG2:-20}))"
config="$work/${BACKEND:-cuda}.toml"
printf '[backend]\nplugin = "%s"\n[params]\ndir = "%s"\n' "${BACKEND:-cuda}" "$work" >"$config"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

if ! ls "$work"/bellhop-chain-*.params >/dev/null 2>&1; then
    t0=$(now)
    "$bundle/bellhop" --config "$config" params gen "$circuit" >/dev/null
    echo "params gen $circuit: $(since "$t0") s"
fi
binaries=("$bundle/bellhop")
[[ -n "${OTHER:-}" ]] && binaries+=("$OTHER")
for run in $(seq "${RUNS:-3}"); do
    for bh in "${binaries[@]}"; do
        t0=$(now)
        "$bh" --config "$config" prove "$circuit" --json >"$work/first-$(basename "$bh")-$run.json" 2>/dev/null
        echo "run $run $(basename "$bh"): $(since "$t0") s" | tee -a "$out/cold-start.txt"
    done
done
cp "$work"/first-*.json "$out/"
