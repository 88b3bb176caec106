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
# cuzk pins Rust 1.86 in rust-toolchain.toml; this machine's own toolchain builds it.
export RUSTUP_TOOLCHAIN="${RUSTUP_TOOLCHAIN:-$(cd / && rustup show active-toolchain | cut -d' ' -f1)}"
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
            cargo build --release --locked -p cuzk-daemon >&2
            echo "$CARGO_TARGET_DIR/release/cuzk-daemon"
            ;;
        *) echo "error: unknown part $part (bench, daemon)" >&2; exit 1 ;;
    esac
done
