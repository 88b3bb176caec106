#!/usr/bin/env bash
# `bellhop serve` end to end (2 KiB sectors unless SIZE says), through the gRPC API in
# Curio's formats: a sector sealed by filecoin-proofs for miner 1000, its SnapDeals update
# (of an 8 MiB sector when SIZE is larger: SnapDeals at 512 MiB is 16 partitions of 57.5 M
# constraints, whose parameters alone take most of a GPU session) and PoSt vanilla proofs,
# and an NI-PoRep sector (`porep-ni`: StackedDrg<size>V1_2_Feat_NonInteractivePoRep, its
# partitions aggregated with an insecure SRS from `bellhop params srs`) when CIRCUITS names
# it, turned into Curio's requests (`bellhop fil request`); every kind proved through the
# daemon by `bellhop client` and checked by filecoin-proofs' verifiers; then, per kind,
# COUNT proofs at once (sustained proofs per minute), and a WinningPoSt submitted behind a
# backlog of BACKLOG PoRep C2 jobs (its latency). With CUZK_BENCH (a cuzk-bench binary,
# scripts/cuzk-peer.sh builds one), cuzk's own client runs status, metrics, single and
# batch against the same daemon. The daemon listens on loopback only.
#
#   scripts/daemon-e2e.sh                           # release build here, CPU backend
#   BELLHOP=.device-bundle/bellhop BELLHOP_PLUGIN_DIR=.device-bundle BACKEND=cuda \
#       .device-bundle/daemon-e2e.sh                # the GPU machine (gpu-bundle.sh copies it)
#
# Not in CI: on 2 cores PoRep's parameters alone take about 13 minutes to generate, so they
# are kept in PARAMS (default: the bellhop cache directory's filecoin-params), shared with
# scripts/filecoin-e2e.sh. Environment: BELLHOP, BACKEND (default cpu), STRATEGY (default
# baseline), CIRCUITS (default "porep snap winning-post window-post"; porep-ni too), COUNT (default 8),
# BACKLOG (default 4), WORKERS (synthesis workers, default 2), CUZK_BENCH, WORK, SIZE
# (sector size of porep and the PoSts: 2KiB, 8MiB or 512MiB), SNAP_SIZE (default SIZE if
# 2KiB, else 8MiB), INPUTS_ONLY=1 (stop once the inputs and parameters are made: long
# staging on the GPU machine). Missing parameters are generated while the sectors are sealed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
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
count="${COUNT:-8}"
backlog="${BACKLOG:-4}"
circuits="${CIRCUITS:-porep snap winning-post window-post}"
config="$work/bellhop.toml"
printf '[params]\ndir = "%s"\n[backend]\nplugin = "%s"\n[synthesis]\nstrategy = "%s"\n[daemon]\nsynthesis_workers = %s\nstate_dir = "%s"\n' \
    "$params" "${BACKEND:-cpu}" "${STRATEGY:-baseline}" "${WORKERS:-2}" "$work/state" >"$config"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
fil() { "$bh" --config "$config" fil "$@"; }
exec > >(tee -a "$work/log.txt") 2>&1

echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores; backend ${BACKEND:-cpu}, strategy ${STRATEGY:-baseline}"
size="${SIZE:-2KiB}"
snap_size="${SNAP_SIZE:-$([[ $size == 2KiB ]] && echo 2KiB || echo 8MiB)}"
# Each circuit's spec, and the sealed sector its input comes from, kept beside its requests
# (scripts/engines-bench.sh reads them).
for circuit in $circuits; do
    if [[ $circuit == snap ]]; then echo "snap:$snap_size"; else echo "${circuit%-ni}:$size"; fi >"$work/$circuit.spec"
    if [[ $circuit == snap && $snap_size != "$size" ]]; then
        echo "$work/snap-sector"
    elif [[ $circuit == porep-ni ]]; then
        echo "$work/sector-ni"
    else
        echo "$work/sector"
    fi >"$work/$circuit.sector-dir"
done
generating=()
for spec in $(for circuit in $circuits; do cat "$work/$circuit.spec"; done | sort -u); do
    if [[ ! -f "$("$bh" --config "$config" params path "$spec")" ]]; then
        echo "== parameters of $spec (insecure, generated once), while the sectors are sealed"
        "$bh" --config "$config" params gen "$spec" >"$work/params-${spec%%:*}.log" 2>&1 &
        generating+=($!)
    fi
done
sealed() { # sealed DIR SIZE [FLAGS]: a sector sealed into DIR, unless one is there already
    [[ -f "$1/sector.json" ]] || fil seal "$1" --sector-size "$2" --seed 1 --miner 1000 "${@:3}"
}
sector="$work/sector"
sealed "$sector" "$size"
[[ -f "$work/winning-post.json" ]] || fil winning-post "$sector" --seed 3 --out "$work/winning-post.json"
[[ -f "$work/window-post.json" ]] || fil window-post "$sector" --seed 4 --out "$work/window-post.json"
if [[ " $circuits " == *" snap "* && ! -f "$work/snap.json" ]]; then
    snap_sector="$(cat "$work/snap.sector-dir")"
    sealed "$snap_sector" "$snap_size"
    fil snap "$snap_sector" --seed 2 --out "$work/snap.json"
fi
cp "$sector/c1.json" "$work/porep.json"
if [[ " $circuits " == *" porep-ni "* ]]; then
    sealed "$work/sector-ni" "$size" --non-interactive
    cp "$work/sector-ni/c1.json" "$work/porep-ni.json"
    srs="$params/v28-fil-inner-product-v1.srs"
    [[ -f "$srs" ]] || "$bh" --config "$config" params srs --dir "$params"
fi
for pid in "${generating[@]}"; do
    wait "$pid" || { cat "$work"/params-*.log; exit 1; }
done
for circuit in $circuits; do
    sector_arg=()
    [[ $circuit == porep* ]] && sector_arg=(--sector "$(cat "$work/$circuit.sector-dir")")
    fil request "$(cat "$work/$circuit.spec")" --input "$work/$circuit.json" "${sector_arg[@]}" \
        --out "$work/$circuit.requests.json"
done
if [[ -n "${INPUTS_ONLY:-}" ]]; then
    echo "== inputs and parameters ready in $work"
    exit 0
fi

# The same requests COUNT times over (each a job of its own).
repeat() {
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); json.dump(r*int(sys.argv[2]), open(sys.argv[3],"w"))' "$@"
}

"$bh" --config "$config" serve --listen 127.0.0.1:0 --status-listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.log" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 600); do
    grep -q "gRPC on" "$work/serve.out" 2>/dev/null && break
    kill -0 $daemon 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.1
done
addr="$(sed -n 's/.*gRPC on \([^;]*\);.*/\1/p' "$work/serve.out")"
status_url="$(sed -n 's/.*status on \(http:[^,]*\),.*/\1/p' "$work/serve.out")"
echo "== daemon at $addr ($status_url)"
client() { "$bh" client --addr "$addr" "$@"; }

status=0
summary="$work/summary.txt"
printf '%-18s %9s %13s %9s %13s  %s\n' circuit "first s" "sustained s" "proofs" "proofs/min" "filecoin-proofs' verifier" >"$summary"
for circuit in $circuits; do
    spec="$(cat "$work/$circuit.spec")"
    requests="$work/$circuit.requests.json"
    sector_arg=()
    [[ $circuit == porep* ]] && sector_arg=(--sector "$(cat "$work/$circuit.sector-dir")")
    echo "== $spec through the daemon"
    t0=$(now)
    client prove --requests "$requests" --out "$work/$circuit.daemon.proof"
    first=$(since "$t0")
    verdict=$(fil verify "$spec" --input "$work/$circuit.json" --proof "$work/$circuit.daemon.proof" "${sector_arg[@]}") || status=1
    echo "$verdict"
    # Sustained: COUNT jobs at once, after the first (parameters resident).
    repeat "$requests" "$count" "$work/$circuit.many.json"
    t0=$(now)
    client prove --requests "$work/$circuit.many.json" --out "$work/$circuit.many.proof" >"$work/$circuit.many.txt"
    sustained=$(since "$t0")
    jobs=$(grep -c COMPLETED "$work/$circuit.many.txt" || true)
    per_minute=$(awk -v n="$jobs" -v s="$sustained" 'BEGIN { printf "%.1f", 60 * n / s }')
    printf '%-18s %9s %13s %9s %13s  %s\n' "$circuit:${spec#*:}" "$first" "$sustained" "$jobs" "$per_minute" \
        "$(echo "$verdict" | grep -o 'accepted\|REJECTED')" >>"$summary"
done

if [[ " $circuits " == *" porep "* && " $circuits " == *" winning-post "* ]]; then
    echo "== a WinningPoSt behind $backlog queued PoRep C2 jobs"
    for i in $(seq "$backlog"); do
        client submit --requests "$work/porep.requests.json" --request-id "backlog-$i-$$"
    done
    t0=$(now)
    client prove --requests "$work/winning-post.requests.json" --out "$work/winning-under-backlog.proof"
    latency=$(since "$t0")
    fil verify "$(cat "$work/winning-post.spec")" --input "$work/winning-post.json" --proof "$work/winning-under-backlog.proof" || status=1
    t1=$(now)
    for i in $(seq "$backlog"); do
        client await "backlog-$i-$$"
    done
    echo "WinningPoSt latency under a backlog of $backlog PoRep C2 jobs: $latency s (the backlog drained $(since "$t1") s later)" |
        tee -a "$summary"
fi

if [[ -n "${CUZK_BENCH:-}" ]]; then
    echo "== cuzk's own client (cuzk-bench) against bellhop serve"
    cb() { "$CUZK_BENCH" --addr "http://$addr" "$@"; }
    cb status
    cb metrics | head -5
    for circuit in $circuits; do
        mapfile -t args < <("$here/cuzk-bench-args.py" "$work/$circuit.requests.json" "$circuit" "$work")
        cb single "${args[@]}" | tee "$work/$circuit.cuzk-single.txt"
        grep -q COMPLETED "$work/$circuit.cuzk-single.txt" || status=1
        cb batch "${args[@]}" -c 4 -j 2 | tee "$work/$circuit.cuzk-batch.txt"
        grep -q "completed:     4" "$work/$circuit.cuzk-batch.txt" || status=1
    done
fi

echo "== summary ($(nproc) cores, backend ${BACKEND:-cpu}; wall times seen by the client; every proof verified by the daemon first)"
cat "$summary"
echo "== daemon status"
client status
exit $status
