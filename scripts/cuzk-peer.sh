#!/usr/bin/env bash
# Builds cuzk (Curio's proving daemon, ../shared/peers/cuzk-curio-e0294b0.tar.gz) as a
# peer, unmodified, apart from Bellhop: its own unpacked workspace and target directory
# under target/cuzk (its bellperson fork and CUDA features stay out of Bellhop's build).
#
#   scripts/cuzk-peer.sh              # cuzk-bench, the gRPC client
#   PARTS="bench daemon" scripts/cuzk-peer.sh   # and cuzk-daemon (cuda-supraseal: nvcc wheels)
#
# CUZK_TARBALL names another copy of the tarball. Prints the built binaries' paths.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
tarball="${CUZK_TARBALL:-$repo/../shared/peers/cuzk-curio-e0294b0.tar.gz}"
[[ -f "$tarball" ]] || { echo "error: no cuzk tarball at $tarball (set CUZK_TARBALL)" >&2; exit 1; }
root="$repo/target/cuzk"
src="$root/src"
stamp="$src/.unpacked-$(sha256sum "$tarball" | cut -c1-16)"
if [[ ! -f "$stamp" ]]; then
    rm -rf "$src" && mkdir -p "$src"
    tar -xzf "$tarball" -C "$src"
    touch "$stamp"
fi
# cuzk's gRPC crate compiles its .proto with protoc.
"$repo/scripts/apt-install.sh" "building cuzk (its .proto files)" protobuf-compiler
# cuzk pins Rust 1.86 in rust-toolchain.toml, and its bellperson fork needs it: from 1.89 on,
# std's File::try_lock_shared shadows fs2's in its GPU locks. rustup installs it once; where
# it cannot, this machine's own toolchain builds cuzk-bench (not cuzk-daemon).
pinned="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$src/extern/cuzk/rust-toolchain.toml")"
if rustup toolchain list | grep -q "^$pinned" || rustup toolchain install "$pinned" --profile minimal >&2; then
    export RUSTUP_TOOLCHAIN="$pinned"
else
    echo "warning: Rust $pinned is not available; building with this machine's toolchain" >&2
    export RUSTUP_TOOLCHAIN="${RUSTUP_TOOLCHAIN:-$(cd / && rustup show active-toolchain | cut -d' ' -f1)}"
fi
export CARGO_TARGET_DIR="$root/target"
cd "$src/extern/cuzk"
for part in ${PARTS:-bench}; do
    case "$part" in
        bench)
            cargo build --release --locked -p cuzk-bench >&2
            echo "$CARGO_TARGET_DIR/release/cuzk-bench"
            ;;
        daemon)
            eval "$("$repo/scripts/cuda-toolchain.sh")"
            # filecoin-proofs' CUDA code (cuda-driver-sys) links libcuda, which only a GPU
            # driver installs: link against a stub that defines every driver function it
            # declares (soname libcuda.so.1); the real driver library is used at run time.
            cargo fetch --locked >&2
            bindings="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cuda-driver-sys-*/src | head -1)"
            stub="$root/cuda-stub"
            mkdir -p "$stub"
            grep -rhoE "pub fn cu[A-Za-z0-9_]+" "$bindings" | sort -u | sed 's/pub fn \(.*\)/int \1(void) { return 999; }/' >"$stub/stub.c"
            cc -shared -fPIC -o "$stub/libcuda.so" -Wl,-soname,libcuda.so.1 "$stub/stub.c"
            ln -sf libcuda.so "$stub/libcuda.so.1"
            # Build scripts linked against it run here too (they call none of it).
            LIBRARY_PATH="$stub${LIBRARY_PATH:+:$LIBRARY_PATH}" LD_LIBRARY_PATH="$stub" \
                cargo build --release --locked -p cuzk-daemon >&2
            echo "$CARGO_TARGET_DIR/release/cuzk-daemon"
            ;;
        *) echo "error: unknown part $part (bench, daemon)" >&2; exit 1 ;;
    esac
done
