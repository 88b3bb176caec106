#!/usr/bin/env bash
# The test command: formatting and lints, every plugin and binary built, then all tests.
# The integration tests load the real plugin files, so the build comes first.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build --workspace --locked
cargo test --workspace --locked
