#!/usr/bin/env bash
# Builds what scripts/gpu-bench.sh runs on the GPU machine (which has no Rust) and copies
# it into .device-bundle/: the release `bellhop`, every plugin, the CUDA crate's GPU tests,
# (unless PEERS=0) bellperson's own provers from peers/ (the OpenCL build, which is also
# the CPU prover with BELLMAN_NO_GPU=1, and the supraseal-c2 build), and (unless CUZK=0)
# cuzk's client cuzk-bench (CUZK=daemon: and cuzk-daemon). PLUGINS and TESTS=0 leave out
# what a run does not need, to stay within what a device call carries. The OpenCL crate's
# tests stay here: each compiles the program afresh, minutes on NVIDIA's driver;
# `bellhop conformance opencl` checks it there, with the program cache.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/cuda-toolchain.sh)"
scripts/opencl-runtime.sh
cargo build --release --locked --workspace --exclude bellhop-tests --exclude bellhop-benches

# The executable of integration test $2 of package $1, built in release.
test_binary() {
    cargo test --release --locked -p "$1" --test "$2" --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$2"
}
rm -rf .device-bundle && mkdir -p .device-bundle
cp target/release/bellhop .device-bundle/
# PLUGINS names the backends and strategies to take (default: every one), e.g. "cuda baseline".
if [[ -n "${PLUGINS:-}" ]]; then
    for plugin in $PLUGINS; do
        cp target/release/libbellhop_*_"${plugin//-/_}".so .device-bundle/
    done
else
    cp target/release/libbellhop_*.so .device-bundle/
fi
[[ "${TESTS:-1}" != 0 ]] && cp "$(test_binary bellhop-cuda gpu)" .device-bundle/cuda-gpu-tests
if [[ "${PEERS:-1}" != 0 ]]; then
    for feature in opencl supraseal; do
        cargo build --release --locked --manifest-path peers/Cargo.toml --features "$feature" --target-dir "peers/target/$feature"
        cp "peers/target/$feature/release/bellperson-peer" ".device-bundle/bellperson-peer-$feature"
    done
fi
# cuzk's client for the daemon stage, and with CUZK=daemon its daemon for the engines stage
# (scripts/cuzk-peer.sh builds them apart; CUZK=0 skips both).
case "${CUZK:-bench}" in
    0) ;;
    daemon) PARTS="bench daemon" scripts/cuzk-peer.sh | xargs -I{} cp {} .device-bundle/ ;;
    *) cp "$(scripts/cuzk-peer.sh)" .device-bundle/cuzk-bench ;;
esac
cp scripts/gpu-bench.sh scripts/porep32-sim.sh scripts/porep32-budgets.sh scripts/porep32-daemon.sh scripts/porep32-cuzk.sh scripts/porep32-inputs.sh scripts/porep32-lease.sh scripts/streamed-bases.sh scripts/cold-start.sh scripts/lookahead-bench.sh scripts/filecoin-e2e.sh scripts/porep-identity.sh scripts/daemon-e2e.sh scripts/engines-bench.sh scripts/cuzk-bench-args.py .device-bundle/
strip .device-bundle/bellhop .device-bundle/*-tests .device-bundle/bellperson-peer-* .device-bundle/cuzk-* 2>/dev/null || true
# Shared libraries keep their dynamic symbols (the plugin header and root module).
strip --strip-unneeded .device-bundle/*.so
du -sh .device-bundle
