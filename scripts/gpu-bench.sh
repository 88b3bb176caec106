#!/usr/bin/env bash
# On the GPU machine, from a bundle made by scripts/gpu-bundle.sh:
#   .device-bundle/gpu-bench.sh [BUNDLE]     (LOG2=20 by default: chain:2^LOG2)
# 1. conformance of each CUDA variant (and the raw primitive times at 2^LOG2);
# 2. proofs with fixed r and s from every backend, compared byte for byte with the CPU's;
# 3. the first proof of a fresh process, per GPU backend;
# 4. chain:2^LOG2 end to end (synthesis included) on every backend in the same run;
# 5. `bellhop ab` of cuda against cuda-pinned.
# Prints one table; logs and reports go to $OUT (default ./gpu-bench-out).
set -euo pipefail
bundle="$(cd "${1:-$(dirname "$0")}" && pwd)"
out="${OUT:-gpu-bench-out}"
mkdir -p "$out"
export BELLHOP_PLUGIN_DIR="$bundle"
bh="$bundle/bellhop"
log2="${LOG2:-20}"
circuit="chain:$((1 << log2))"
work="$(mktemp -d)"
backends="${BACKENDS:-cpu cuda cuda-pinned}"
[[ -f "$bundle/libbellhop_backend_opencl.so" ]] && backends="$backends opencl"
for b in $backends; do
    printf '[backend]\nplugin = "%s"\n[params]\ndir = "%s"\n' "$b" "$work" >"$work/$b.toml"
done
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
exec > >(tee "$out/log.txt") 2>&1

echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$bh" plugins

echo "== conformance, and raw primitive times at 2^$log2"
status=0
gpu_backends=$(echo "$backends" | tr ' ' '\n' | grep -v '^cpu$' || true)
for v in $gpu_backends; do
    "$bh" conformance "$v" --time-at "$log2" | tee "$work/conformance-$v.txt" | grep -E "passed|primitive|^  " || status=1
done
[[ -x "$bundle/cuda-gpu-tests" ]] && { "$bundle/cuda-gpu-tests" --test-threads 1 || status=1; }

echo "== parameters for $circuit"
t0=$(now)
"$bh" --config "$work/cpu.toml" params gen "$circuit"
echo "params gen: $(since "$t0") s"

echo "== proofs with fixed r and s, compared with the CPU backend's"
for b in $backends; do
    "$bh" --config "$work/$b.toml" prove "$circuit" --count 2 --insecure-blinding-seed 7 --out "$work/$b.proofs" >/dev/null
    if cmp -s "$work/cpu.proofs" "$work/$b.proofs"; then echo "$b: identical to cpu"; else echo "$b: DIFFERS from cpu"; status=1; fi
done

echo "== first proof of a fresh process (process wall time: start, params, kept bases, proof, verify)"
declare -A first
for b in $backends; do
    t0=$(now)
    "$bh" --config "$work/$b.toml" prove "$circuit" --json >"$work/first-$b.json"
    first[$b]=$(since "$t0")
    echo "$b: ${first[$b]} s"
done

echo "== $circuit end to end, after one warm-up proof"
for b in $backends; do
    runs=5
    [[ $b == cpu ]] && runs=3
    "$bh" --config "$work/$b.toml" bench "$circuit" --runs "$runs" --warmup 1 --json >"$out/bench-$b.json"
done

echo "== ab: cuda (A) against cuda-pinned (B)"
[[ " $backends " == *" cuda-pinned "* ]] && "$bh" ab "$circuit" --set-a backend.plugin=cuda --set-b backend.plugin=cuda-pinned \
    --set-a "params.dir=\"$work\"" --set-b "params.dir=\"$work\"" --runs 12 --report "$out/ab" | tail -20

echo "== summary"
python3 - "$out" "$work" $backends <<'PY'
import json, re, sys
out, work, backends = sys.argv[1], sys.argv[2], sys.argv[3:]
phases = ["synthesis", "h", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "verify"]
print(f"{'backend':<12} {'first':>7} {'proof':>7} " + " ".join(f"{p:>9}" for p in phases) + "  (seconds; proof = median sum of phases)")
for b in backends:
    bench = json.load(open(f"{out}/bench-{b}.json"))
    sums = sorted(sum(row.get(p, 0.0) for p in phases + ["dealloc"]) for row in bench["per_proof"])
    first = json.load(open(f"{work}/first-{b}.json"))
    first_sum = sum(first["proofs"][0].get(p, 0.0) for p in phases + ["dealloc"]) if first.get("proofs") else float("nan")
    cells = " ".join(f"{bench['phases'][p]['median']:>9.4f}" for p in phases)
    print(f"{b:<12} {first_sum:>7.3f} {sums[len(sums)//2]:>7.3f} {cells}")
for v in [b for b in backends if b != "cpu"]:
    text = open(f"{work}/conformance-{v}.txt").read()
    raw = {m.group(1): float(m.group(2)) / 1e3 for m in re.finditer(r"^  (\w+)\s+([\d.]+)$", text, re.M)}
    bench = json.load(open(f"{out}/bench-{v}.json"))["phases"]
    gpu = sum(bench[p]["median"] for p in ["h", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2"])
    # The prover's GPU work: compute_h, four G1 MSMs (h, l, a, b_g1) and one G2 MSM.
    prim = raw.get("compute_h", 0) + 4 * raw.get("msm_g1", 0) + raw.get("msm_g2", 0)
    print(f"{v}: GPU phases {gpu:.3f} s; raw sppark primitives at the same size "
          f"(compute_h + 4 x msm_g1 + msm_g2) {prim:.3f} s; ratio {gpu / prim if prim else float('nan'):.2f}")
PY
exit $status
