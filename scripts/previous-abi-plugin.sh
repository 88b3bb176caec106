#!/usr/bin/env bash
# Rebuilds tests/fixtures/previous-abi/template-abi-1.3.so, the plugin that
# tests/tests/previous_abi.rs shows refused by this build's host (ABI 1.4, an older minor
# cannot load): the template backend as it was at the last commit before
# `bellhop-plugin-api` was split into the frozen ABI crate and `bellhop-plugin-sdk`
# (ABI 1.3), built in release from a worktree of that commit, so its
# build info names the commit. A cold build of the template's dependencies (minutes): run
# it only to replace the file, e.g. after moving to another platform.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=8822e7d6686c38c3dcc5cbd571d4d73543bf38e1
work=$(mktemp -d)
trap 'git worktree remove --force "$work/src" 2>/dev/null; rm -rf "$work"' EXIT
git worktree add --quiet --detach "$work/src" "$commit"
# Panic locations name source paths: name them apart from this machine's directories.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
export RUSTFLAGS="--remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$work/src=/bellhop"
(cd "$work/src" && cargo build --release --locked -p bellhop-backend-template --target-dir "$work/target")
mkdir -p tests/fixtures/previous-abi
out=tests/fixtures/previous-abi/template-abi-1.3.so
cp "$work/target/release/libbellhop_backend_template.so" "$out"
# Shared libraries keep their dynamic symbols (the plugin header and root module).
strip --strip-unneeded "$out"
chmod 644 "$out"
ls -l "$out"
