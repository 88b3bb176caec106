#!/usr/bin/env bash
# On the GPU machine, from a bundle made by scripts/gpu-bundle.sh:
#   .device-bundle/gpu-bench.sh [BUNDLE]     (LOG2=20 by default: chain:2^LOG2; or CIRCUIT)
# Stage `ours` (STAGES, default "ours peers"; `params` makes only the parameters):
# 1. parameters for chain:2^LOG2; the OpenCL backend's first proof with an empty program
#    cache (cold: the driver compiles the kernels), then with the cache (warm);
# 2. conformance of each GPU backend (and the raw primitive times at 2^LOG2), and the
#    backends' own GPU test binaries;
# 3. proofs (PROOFS, default 2) with fixed r and s from every backend, compared byte for
#    byte with the CPU's;
# 4. the first proof of a fresh process, per backend;
# 5. chain:2^LOG2 end to end (synthesis included) on every backend (BENCH picks them);
# 6. `bellhop ab` of cuda against cuda-pinned (AB=0 skips it), and with AB_CALLS=1 of
#    cuda through the primitives (A) against cuda's h and MSMs in one call (B).
# Backends: cpu and every GPU backend plugin in the bundle (`bellhop plugins --json`:
# cuda, cuda-pinned, opencl, cuda-supraseal), or BACKENDS.
# Stage `peers`: bellperson's own provers on the same circuit and parameter file: CPU,
# OpenCL, supraseal-c2 (the bundle's bellperson-peer-* builds).
# Each stage fits one 10-minute call: run them as two calls with the same WORK directory
# (kept between the calls) and the second prints the table of both.
# Stages `daemon` and `engines`: see below.
# Results go to $WORK (default: a new temporary directory) and, as results.tgz, to $OUT.
set -euo pipefail
bundle="$(cd "${1:-$(dirname "$0")}" && pwd)"
out="${OUT:-gpu-bench-out}"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$out" "$work"
work="$(cd "$work" && pwd)"
export BELLHOP_PLUGIN_DIR="$bundle"
# Bellhop refuses plugin files that users other than their owner may write.
chmod go-w "$bundle"/*.so 2>/dev/null || true
# A test that finds no GPU here fails instead of saying so and passing.
export BELLHOP_REQUIRE_GPU=1
# Program caches (the OpenCL backend's) live with the run.
export BELLHOP_CACHE_DIR="$work/cache"
bh="$bundle/bellhop"
log2="${LOG2:-20}"
# CIRCUIT overrides the circuit (e.g. sha256-merkle:91, about 2^22 constraints; set LOG2=22
# to time the primitives at its domain size).
circuit="${CIRCUIT:-chain:$((1 << log2))}"
stages="${STAGES:-ours peers}"
# cpu and every GPU backend in the bundle, as `bellhop plugins --json` lists them, unless
# BACKENDS names some.
if [[ -z "${BACKENDS:-}" ]]; then
    backends="cpu $("$bh" plugins --json | python3 -c '
import json, sys
plugins = json.load(sys.stdin)["plugins"]
print(" ".join(sorted(p["name"] for p in plugins if p.get("kind") == "backend" and "gpu" in p.get("capabilities", []))))')"
else
    backends="$BACKENDS"
fi
bench_backends="${BENCH:-$backends}"
for b in $backends; do
    printf '[backend]\nplugin = "%s"\n[params]\ndir = "%s"\n' "$b" "$work" >"$work/$b.toml"
    # STRATEGY picks the synthesis strategy (default baseline); pce caches in $BELLHOP_CACHE_DIR.
    [[ -n "${STRATEGY:-}" ]] && printf '[synthesis]\nstrategy = "%s"\n' "$STRATEGY" >>"$work/$b.toml"
done
conformance_backends="${CONFORMANCE:-$(echo "$backends" | tr ' ' '\n' | grep -v '^cpu$' | tr '\n' ' ')}"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
exec > >(tee -a "$work/log.txt" "$out/log.txt") 2>&1
# Everything but parameters, proofs and caches, as one file (the device tool returns few files).
trap 'tar czf "$out/results.tgz" -C "$work" --exclude="*.params" --exclude="*.proofs" --exclude="*.many.json" --exclude=sector --exclude=snap-sector --exclude=cache --exclude=icd . || true' EXIT

# NVIDIA's OpenCL library is installed but not registered with the ICD loader there:
# register it for this process (and hide PoCL, so the devices are the GPUs).
if nvidia-smi -L >/dev/null 2>&1 && ldconfig -p | grep -q libnvidia-opencl.so.1; then
    mkdir -p "$work/icd"
    echo libnvidia-opencl.so.1 >"$work/icd/nvidia.icd"
    export OCL_ICD_VENDORS="$work/icd"
    # The loader may list PoCL too: pick the GPU by name.
    [[ -f "$work/opencl.toml" ]] && printf '[backend.options]\ndevice_name = "NVIDIA"\n' >>"$work/opencl.toml"
fi

echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores; stages: $stages"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
status=0

# Stage `params` alone makes the parameters (minutes at 2^22) and stops; `ours` makes them too.
if [[ " $stages " == *" ours "* || " $stages " == *" params "* ]]; then
    # The file `bellhop params gen` writes (host/src/params.rs: file_name); kept in WORK.
    params="$work/bellhop-$(echo "$circuit" | sed 's/[^A-Za-z0-9-]/-/g').params"
    if [[ -f "$params" ]]; then
        echo "== parameters for $circuit: reusing $params"
    else
        echo "== parameters for $circuit"
        t0=$(now)
        "$bh" --config "$work/cpu.toml" params gen "$circuit"
        echo "params gen: $(since "$t0") s"
    fi
fi

if [[ " $stages " == *" ours "* ]]; then
    "$bh" plugins

    if [[ " $backends " == *" opencl "* ]]; then
        echo "== opencl: first proof of a fresh process, cold (empty program cache) then warm"
        rm -rf "$BELLHOP_CACHE_DIR/opencl"
        for state in cold warm; do
            t0=$(now)
            "$bh" --config "$work/opencl.toml" prove "$circuit" --json >"$work/first-opencl-$state.json" ||
                { echo "opencl $state: FAILED"; status=1; continue; }
            echo "opencl $state: $(since "$t0") s" | tee "$work/first-opencl-$state.txt"
        done
    fi

    echo "== conformance, and raw primitive times at 2^$log2"
    for v in $conformance_backends; do
        "$bh" --config "$work/$v.toml" conformance "$v" --time-at "$log2" | tee "$work/conformance-$v.txt" | grep -E "passed|primitive|^  " || status=1
    done
    [[ -x "$bundle/cuda-gpu-tests" ]] && { "$bundle/cuda-gpu-tests" --test-threads 1 || status=1; }

    echo "== proofs with fixed r and s, compared with the CPU backend's"
    for b in $backends; do
        "$bh" --config "$work/$b.toml" prove "$circuit" --count "${PROOFS:-2}" --insecure-blinding-seed 7 --out "$work/$b.proofs" >/dev/null
        if cmp -s "$work/cpu.proofs" "$work/$b.proofs"; then echo "$b: identical to cpu"; else echo "$b: DIFFERS from cpu"; status=1; fi
    done

    echo "== first proof of a fresh process (process wall time: start, params, kept bases, proof, verify)"
    for b in $backends; do
        t0=$(now)
        "$bh" --config "$work/$b.toml" prove "$circuit" --json >"$work/first-$b.json"
        echo "$b: $(since "$t0") s" | tee "$work/first-$b.txt"
    done

    echo "== $circuit end to end, after one warm-up proof"
    for b in $bench_backends; do
        runs=5
        [[ $b == cpu ]] && runs=2
        "$bh" --config "$work/$b.toml" bench "$circuit" --runs "$runs" --warmup 1 --json >"$work/bench-$b.json"
    done

    if [[ " $backends " == *" cuda-pinned "* && "${AB:-1}" != 0 ]]; then
        echo "== ab: cuda (A) against cuda-pinned (B)"
        "$bh" ab "$circuit" --set-a backend.plugin=cuda --set-b backend.plugin=cuda-pinned \
            --set-a "params.dir=\"$work\"" --set-b "params.dir=\"$work\"" --runs 12 --report "$work/ab" | tail -20
    fi
    if [[ "${AB_CALLS:-0}" != 0 ]]; then
        echo "== ab: cuda through the primitives (A) against cuda's proof_msms, one call (B)"
        "$bh" ab "$circuit" --set-a backend.plugin=cuda --set-b backend.plugin=cuda --set-a backend.proof_msms=false \
            --set-a "params.dir=\"$work\"" --set-b "params.dir=\"$work\"" --runs "${AB_RUNS:-12}" \
            --report "$work/ab-calls" | tail -24
    fi
fi

if [[ " $stages " == *" peers "* ]]; then
    echo "== peers: bellperson's own provers on $circuit, the same parameter file"
    # The file `bellhop params gen` wrote in stage ours (host/src/params.rs: file_name).
    params="$work/bellhop-$(echo "$circuit" | sed 's/[^A-Za-z0-9-]/-/g').params"
    [[ -f "$params" ]] || { echo "no $params: run stage ours first with the same WORK"; exit 1; }
    peer() { # name, binary, environment...
        local name=$1 bin=$2
        shift 2
        [[ -x "$bin" ]] || { echo "$name: not in the bundle"; return; }
        env "$@" "$bin" "$circuit" --params "$params" --runs "${PEER_RUNS:-2}" >"$work/peer-$name.json" || { echo "$name: FAILED"; status=1; }
        cat "$work/peer-$name.json"
    }
    peer bellperson-supraseal "$bundle/bellperson-peer-supraseal"
    peer bellperson-opencl "$bundle/bellperson-peer-opencl"
    peer bellperson-cpu "$bundle/bellperson-peer-opencl" BELLMAN_NO_GPU=1
fi

# Stage `daemon`: bellhop serve on this machine's GPU (DAEMON_BACKEND, default cuda), driven
# in Curio's formats at 2 KiB: every kind proved and checked by filecoin-proofs, sustained
# proofs per minute, a WinningPoSt behind a PoRep backlog, and cuzk-bench against it
# (scripts/daemon-e2e.sh; its parameters are kept in WORK/filecoin-params). SIZE=512MiB
# (SnapDeals at 8 MiB) makes larger inputs; INPUTS_ONLY=1 stops once they are made, so
# sealing and parameters can be staged in one call and the engines run in the next.
if [[ " $stages " == *" daemon "* ]]; then
    cuzk_bench=""
    [[ -x "$bundle/cuzk-bench" ]] && cuzk_bench="$bundle/cuzk-bench"
    BELLHOP="$bh" BACKEND="${DAEMON_BACKEND:-cuda}" PARAMS="$work/filecoin-params" WORK="$work/daemon" \
        CUZK_BENCH="$cuzk_bench" WORKERS="${WORKERS:-4}" "$bundle/daemon-e2e.sh" || status=1
fi

# Stage `engines` (after `daemon`, same WORK): Bellhop's daemon and cuzk's on this GPU with
# the same client and jobs (scripts/engines-bench.sh; needs cuzk-daemon in the bundle).
if [[ " $stages " == *" engines "* ]]; then
    INPUTS="$work/daemon" PARAMS="$work/filecoin-params" WORK="$work/engines" BACKEND="${DAEMON_BACKEND:-cuda}" \
        "$bundle/engines-bench.sh" || status=1
fi
[[ " $stages " == *" ours "* || " $stages " == *" peers "* ]] || exit $status

echo "== summary"
python3 - "$work" "$circuit" $backends <<'PY'
import glob, json, os, re, sys
work, circuit, backends = sys.argv[1], sys.argv[2], sys.argv[3:]
phases = ["synthesis", "prove_batch", "msms", "msms.msm_h", "msms.msm_l", "msms.msm_a", "msms.msm_b_g1", "msms.msm_b_g2", "verify"]
def load(name):
    path = os.path.join(work, name)
    return json.load(open(path)) if os.path.exists(path) else None
def wall(name):
    path = os.path.join(work, name)
    return float(open(path).read().split()[-2]) if os.path.exists(path) else float("nan")
print(f"{'prover':<24} {'first':>7} {'proof':>7} {'latency':>7} " + " ".join(f"{p:>9}" for p in phases))
print("  first: process start to first verified proof (wall, s); proof: wall time per proof after warm-up,")
print("  synthesis of the next overlapping this one (s); latency: median sum of a proof's phases (s)")
for b in backends:
    bench = load(f"bench-{b}.json")
    if not bench or bench["circuit"] != circuit:  # WORK may hold another circuit's runs
        continue
    top = ["synthesis", "prove_batch", "msms", "verify", "dealloc"]  # sub-phases are inside these
    sums = sorted(sum(row.get(p, 0.0) for p in top) for row in bench["per_partition"])
    cells = " ".join(f"{bench['phases'].get(p, {}).get('median', 0.0):>9.4f}" for p in phases)
    steady = bench.get("seconds_per_proof_after_warmup", float("nan"))
    print(f"bellhop {b:<16} {wall(f'first-{b}.txt'):>7.2f} {steady:>7.3f} {sums[len(sums)//2]:>7.3f} {cells}")
for state in ["cold", "warm"]:
    if os.path.exists(os.path.join(work, f"first-opencl-{state}.txt")):
        print(f"bellhop opencl, first proof with a {state} program cache: {wall(f'first-opencl-{state}.txt'):.2f} s")
for path in sorted(glob.glob(os.path.join(work, "peer-*.json"))):
    try:
        p = json.load(open(path))
    except ValueError:
        continue
    if p["circuit"] != circuit:
        continue
    print(f"{p['prover']:<24} {p['process_to_first_proof_s']:>7.2f} {p['median_s']:>7.3f} {p['median_s']:>7.3f}   (bellperson's own prover, one proof at a time)")
for v in [b for b in backends if b != "cpu"]:
    path = os.path.join(work, f"conformance-{v}.txt")
    bench = load(f"bench-{v}.json")
    if not os.path.exists(path) or not bench or bench["circuit"] != circuit:
        continue
    raw = {m.group(1): float(m.group(2)) / 1e3 for m in re.finditer(r"^  (\w+)\s+([\d.]+)$", open(path).read(), re.M)}
    gpu = bench["phases"].get("msms", {}).get("median", 0.0)
    if gpu == 0:
        continue  # a fused backend: its proofs have no msms phase
    # The prover's GPU work: compute_h, four G1 MSMs (h, l, a, b_g1) and one G2 MSM.
    prim = raw.get("compute_h", 0) + 4 * raw.get("msm_g1", 0) + raw.get("msm_g2", 0)
    print(f"{v}: GPU phases {gpu:.3f} s; its raw primitives at the same size "
          f"(compute_h + 4 x msm_g1 + msm_g2) {prim:.3f} s; ratio {gpu / prim if prim else float('nan'):.2f}")
PY
exit $status
