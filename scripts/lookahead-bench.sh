#!/usr/bin/env bash
# Throughput against lookahead, on the GPU machine, from a bundle made by
# scripts/gpu-bundle.sh: `bellhop bench CIRCUIT` (chain:2^20) on BACKEND (cuda) with
# STRATEGY (baseline) at each of LOOKAHEADS ("1 4"), alternating, ROUNDS (2) times, each
# RUNS (8) proofs after one warm-up; prints seconds per proof after the warm-up. With
# lookahead L the pipeline synthesizes up to L batches at once, as many as the measured
# synthesis and proving times need. Parameters (and pce's cache) are made once in WORK
# (kept between calls); results go to OUT.
set -euo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
work="${WORK:?set WORK to a directory kept between calls}"
out="${OUT:?set OUT to where results go}"
mkdir -p "$work" "$out"
export BELLHOP_PLUGIN_DIR="$bundle" BELLHOP_CACHE_DIR="$work/cache"
chmod go-w "$bundle"/*.so 2>/dev/null || true
circuit="${CIRCUIT:-chain:1048576}"
name="$(echo "$circuit" | sed 's/[^A-Za-z0-9-]/-/g')"
strategy="${STRATEGY:-baseline}"
config() { # lookahead
    printf '[backend]\nplugin = "%s"\n[synthesis]\nstrategy = "%s"\n[params]\ndir = "%s"\n[pipeline]\nlookahead = %s\n' \
        "${BACKEND:-cuda}" "$strategy" "$work" "$1" >"$work/lookahead-$1.toml"
    echo "$work/lookahead-$1.toml"
}
if [[ ! -f "$work/bellhop-$name.params" ]]; then
    t0=$(date +%s.%N)
    "$bundle/bellhop" --config "$(config 1)" params gen "$circuit" >/dev/null
    echo "params gen $circuit: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
fi
for round in $(seq "${ROUNDS:-2}"); do
    for lookahead in ${LOOKAHEADS:-1 4}; do
        result="$out/$name-$strategy-lookahead-$lookahead-$round.json"
        "$bundle/bellhop" --config "$(config "$lookahead")" bench "$circuit" --runs "${RUNS:-8}" --warmup 1 --json \
            >"$result" 2>/dev/null
        python3 - "$result" "$lookahead" "$round" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
phases = b["phases"]
gpu = sum(phases.get(p, {}).get("median", 0.0) for p in ["msms", "h", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2"])
print(f"round {sys.argv[3]} lookahead {sys.argv[2]}: {b['seconds_per_proof_after_warmup']:.3f} s per proof "
      f"(synthesis {phases['synthesis']['median']:.3f} s, h and MSMs {gpu:.3f} s a proof, medians)")
PY
    done
done
