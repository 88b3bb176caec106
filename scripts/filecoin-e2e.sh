#!/usr/bin/env bash
# Filecoin end to end at 2 KiB, from real inputs: a sector sealed by filecoin-proofs
# (`bellhop fil seal`), its SnapDeals update and PoSt vanilla proofs, a second sector
# sealed as Curio's UseSyntheticPoRep seals (`porep-synthetic`: proved as porep:2KiB from
# its C1 output, StackedDrg2KiBV1_1_Feat_SyntheticPoRep) and a third as an NI-PoRep
# (`porep-ni`: StackedDrg2KiBV1_2_Feat_NonInteractivePoRep, 13 partitions aggregated with
# an insecure SnarkPack SRS from `bellhop params srs`); parameters under
# filecoin-proofs' names (generated once, then reused); every circuit proved by Bellhop,
# verified by filecoin-proofs (verify_seal, the update verifier, the PoSt verifiers), and
# proved again by filecoin-proofs' own prover in the same run for the times beside.
#
#   scripts/filecoin-e2e.sh                  # release build here, CPU backend
#   BELLHOP=.device-bundle/bellhop BELLHOP_PLUGIN_DIR=.device-bundle BACKEND=cuda \
#       .device-bundle/filecoin-e2e.sh   # the GPU machine (scripts/gpu-bundle.sh copies it)
#
# Not in CI: on 2 cores PoRep's parameters alone take about 10 minutes to generate, so they
# are kept in PARAMS (default: the bellhop cache directory's filecoin-params).
# Environment: BELLHOP (binary; default: built with cargo), BACKEND (default cpu), STRATEGY
# (default baseline), CIRCUITS (default "porep porep-synthetic porep-ni snap winning-post
# window-post"), WORK.
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
config="$work/bellhop.toml"
printf '[params]\ndir = "%s"\n[backend]\nplugin = "%s"\n[synthesis]\nstrategy = "%s"\n' \
    "$params" "${BACKEND:-cpu}" "${STRATEGY:-baseline}" >"$config"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
fil() { "$bh" --config "$config" fil "$@"; }

echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores; backend ${BACKEND:-cpu}, strategy ${STRATEGY:-baseline}"
sector="$work/sector"
if [[ ! -f "$sector/sector.json" ]]; then
    fil seal "$sector" --sector-size 2KiB --seed 1
    fil snap "$sector" --seed 2 --out "$work/snap.json"
    fil winning-post "$sector" --seed 3 --out "$work/winning-post.json"
    fil window-post "$sector" --seed 4 --out "$work/window-post.json"
fi
synthetic="$work/sector-synthetic-porep"
[[ -f "$synthetic/sector.json" ]] || fil seal "$synthetic" --sector-size 2KiB --seed 5 --synthetic-porep
ni="$work/sector-ni"
[[ -f "$ni/sector.json" ]] || fil seal "$ni" --sector-size 2KiB --seed 6 --non-interactive
[[ -f "$params/v28-fil-inner-product-v1.srs" ]] || "$bh" --config "$config" params srs --dir "$params"
cp "$sector/c1.json" "$work/porep.json"
cp "$synthetic/c1.json" "$work/porep-synthetic.json"
cp "$ni/c1.json" "$work/porep-ni.json"

status=0
summary="$work/summary.txt"
printf '%-18s %10s %12s %18s  %s\n' circuit "params s" "bellhop s" "filecoin-proofs s" "filecoin-proofs' verifier" >"$summary"
for circuit in ${CIRCUITS:-porep porep-synthetic porep-ni snap winning-post window-post}; do
    spec="${circuit%-synthetic}"
    spec="${spec%-ni}:2KiB"
    input="$work/$circuit.json"
    sector_arg=()
    [[ $circuit == porep ]] && sector_arg=(--sector "$sector")
    [[ $circuit == porep-synthetic ]] && sector_arg=(--sector "$synthetic")
    [[ $circuit == porep-ni ]] && sector_arg=(--sector "$ni")
    echo "== $spec"
    gen=reused
    if [[ ! -f "$("$bh" --config "$config" params path "$spec")" ]]; then
        t0=$(now)
        "$bh" --config "$config" params gen "$spec"
        gen=$(since "$t0")
    fi
    t0=$(now)
    "$bh" --config "$config" prove "$spec" --input "$input" --out "$work/$circuit.bellhop.proof"
    ours=$(since "$t0")
    verdict=$(fil verify "$spec" --input "$input" --proof "$work/$circuit.bellhop.proof" "${sector_arg[@]}") || status=1
    echo "$verdict"
    t0=$(now)
    fil reference "$spec" --input "$input" --out "$work/$circuit.reference.proof" "${sector_arg[@]}"
    theirs=$(since "$t0")
    fil verify "$spec" --input "$input" --proof "$work/$circuit.reference.proof" "${sector_arg[@]}" || status=1
    printf '%-18s %10s %12s %18s  %s\n' "$circuit:2KiB" "$gen" "$ours" "$theirs" "$(echo "$verdict" | grep -o 'accepted\|REJECTED')" >>"$summary"
done
echo "== summary (process wall times; Bellhop's includes loading the parameters and verifying)"
cat "$summary"
exit $status
