#!/usr/bin/env bash
# The daemon under a bounded load on this machine, loopback only: three 2 KiB sectors
# sealed by filecoin-proofs, Curio's WinningPoSt and WindowPoSt requests from them, and
# `bellhop client bench` with CLIENTS clients sending COUNT operations (mixed kinds and
# priorities, duplicates, cancels, malformed requests) to `bellhop serve` under a memory
# budget of BUDGET, then BURST submissions at once past `[daemon] max_queued` = MAX_QUEUED;
# GetStatus is timed every 100 ms throughout. Every outcome and proof is checked; the
# report goes to WORK/report.json.
#
#   scripts/load-test.sh                 # CLIENTS=8 COUNT=200 BUDGET=512MiB, CPU backend
#   CLIENTS=16 COUNT=400 BURST=2000 MAX_QUEUED=50 scripts/load-test.sh
#
# Environment: BELLHOP (binary; default: a release build), CLIENTS, COUNT, BUDGET, BURST
# (default 0), MAX_QUEUED (default 1000), BACKEND, PARAMS (parameter cache, shared with
# filecoin-e2e.sh), WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${BELLHOP:-}" ]]; then
    cargo build --release --locked -p bellhop
    BELLHOP=target/release/bellhop
fi
bh="$(realpath "$BELLHOP")"
cache="${BELLHOP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bellhop}"
params="${PARAMS:-$cache/filecoin-params}"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$params" "$work"
work="$(cd "$work" && pwd)"
config="$work/bellhop.toml"
printf '[params]\ndir = "%s"\n[backend]\nplugin = "%s"\n[daemon]\nstate_dir = "%s"\nmax_queued = %s\n[memory]\nbudget = "%s"\n' \
    "$params" "${BACKEND:-cpu}" "$work/state" "${MAX_QUEUED:-1000}" "${BUDGET:-512MiB}" >"$config"
fil() { "$bh" --config "$config" fil "$@"; }
exec > >(tee -a "$work/log.txt") 2>&1

echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores; load test, ${CLIENTS:-8} clients, ${COUNT:-200} operations, budget ${BUDGET:-512MiB}, burst ${BURST:-0} past max_queued ${MAX_QUEUED:-1000}"
sectors=()
for seed in 1 2 3; do
    sector="$work/sector-$seed"
    [[ -f "$sector/sector.json" ]] || fil seal "$sector" --seed "$seed" >/dev/null
    sectors+=("$sector")
done
fil winning-post "${sectors[@]}" --seed 7 --out "$work/winning.json" >/dev/null
fil window-post "${sectors[@]}" --seed 8 --out "$work/window.json" >/dev/null
for kind in winning window; do
    spec="$kind-post:2KiB"
    [[ -f "$("$bh" --config "$config" params path "$spec")" ]] || "$bh" --config "$config" params gen "$spec"
    fil request "$spec" --input "$work/$kind.json" --out "$work/$kind.requests.json"
done

"$bh" --config "$config" serve --listen 127.0.0.1:0 --status-listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.log" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 600); do
    grep -q "gRPC on" "$work/serve.out" 2>/dev/null && break
    kill -0 $daemon 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.1
done
addr="$(sed -n 's/.*gRPC on \([^;]*\);.*/\1/p' "$work/serve.out")"
status="$(sed -n 's/.*status on http:\/\/\([^/]*\)\/status.*/\1/p' "$work/serve.out")"
"$bh" client --addr "$addr" bench --requests "$work/winning.requests.json" --requests "$work/window.requests.json" \
    --clients "${CLIENTS:-8}" --count "${COUNT:-200}" --burst "${BURST:-0}" --params "$params" --status "$status" \
    --json "$work/report.json"
