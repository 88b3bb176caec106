#!/usr/bin/env bash
# PoRep proofs from pce's native witness against the gadgets' (issue 33), from a sector
# sealed by filecoin-proofs: `bellhop fil seal` beside `bellhop params gen porep:SIZE`
# (insecure: random toxic waste), then `bellhop prove` with fixed r and s
# (--insecure-blinding-seed 5) three times: pce recording its cache (through the gadgets),
# pce replaying it (the native witness) and the baseline strategy (the gadgets). Passes
# when the three proof files are byte-identical and filecoin-proofs' verifier accepts the
# native witness's (`bellhop fil verify`).
#
#   SIZE=2KiB WAIT=3600 scripts/porep-identity.sh     # here: release build, CPU backend (about 11 min on 2 cores)
#   WORK=/tmp/id OUT=$OUT SIZE=512MiB BACKEND=cuda .device-bundle/porep-identity.sh   # the GPU machine (about 5 min)
#
# It runs in a session of its own that outlives a call, in WORK/SIZE (WORK: default a new
# temporary directory); called again with the same WORK and SIZE it only waits. Each call waits up to WAIT
# seconds (560), prints the log and copies it to OUT (porep-identity-SIZE.txt), and exits
# with the run's status once it has ended (2 while it still runs). A step whose output is
# there already is skipped, so a WORK kept from an earlier run reuses its sector and
# parameters. BELLHOP: the binary (default: the bundle's beside this script, else a release
# build here with the pce plugin).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
size="${SIZE:-2KiB}"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
export WORK="$work"
run="$work/$size"
mkdir -p "$run"
log="$run/porep-identity-$size.txt"

if [[ "${1:-}" == --session ]]; then
    bh="$2"
    circuit="porep:$size"
    sector="$run/sector"
    params="$run/params"
    mkdir -p "$params"
    step() { echo "== $(date -u +%H:%M:%S) $*"; }
    config() { # config NAME STRATEGY: NAME.toml proving with STRATEGY on BACKEND
        printf '[params]\ndir = "%s"\n[backend]\nplugin = "%s"\n[synthesis]\nstrategy = "%s"\n' \
            "$params" "${BACKEND:-cpu}" "$2" >"$run/$1.toml"
        [[ "$2" == pce ]] && printf '[synthesis.options]\ncache_dir = "%s"\n' "$run/pce" >>"$run/$1.toml"
        echo "$run/$1.toml"
    }
    base="$(config base baseline)"
    pce="$(config pce pce)"
    step "$circuit: $(nproc) cores, backend ${BACKEND:-cpu}, $bh"
    if ! compgen -G "$params/v28-stacked-proof-of-replication-*.vk" >/dev/null; then
        step "params gen $circuit, beside the seal"
        "$bh" --config "$base" params gen "$circuit" --dir "$params" >"$run/params-gen.log" 2>&1 &
        gen=$!
    fi
    if [[ ! -f "$sector/sector.json" ]]; then
        step "fil seal --sector-size $size"
        "$bh" --config "$base" fil seal "$sector" --sector-size "$size" --seed 1
    fi
    if [[ -n "${gen:-}" ]]; then
        wait "$gen" || { cat "$run/params-gen.log"; exit 1; }
        cat "$run/params-gen.log"
    fi
    prove() { # prove CONFIG OUT
        step "prove $circuit with $(basename "$1" .toml) -> $(basename "$2")"
        "$bh" --config "$1" prove "$circuit" --input "$sector/c1.json" --out "$2" --insecure-blinding-seed 5
    }
    rm -rf "$run/pce"
    prove "$pce" "$run/pce-recording.proof"
    prove "$pce" "$run/pce-replaying.proof"
    prove "$base" "$run/baseline.proof"
    status=0
    for proof in pce-recording pce-replaying; do
        if cmp "$run/$proof.proof" "$run/baseline.proof"; then
            echo "$proof.proof: IDENTICAL to baseline.proof ($(stat -c %s "$run/baseline.proof") bytes)"
        else
            echo "$proof.proof: DIFFERS from baseline.proof"
            status=1
        fi
    done
    step "fil verify"
    "$bh" --config "$pce" fil verify "$circuit" --input "$sector/c1.json" --proof "$run/pce-replaying.proof" \
        --sector "$sector" || status=1
    step "ended with status $status"
    exit "$status"
fi

if [[ ! -f "$run/started" ]]; then
    if [[ -n "${BELLHOP:-}" ]]; then
        bh="$(realpath "$BELLHOP")"
    elif [[ -x "$here/bellhop" ]]; then
        bh="$here/bellhop"
        export BELLHOP_PLUGIN_DIR="${BELLHOP_PLUGIN_DIR:-$here}"
    else
        (cd "$here/.." && cargo build --release --locked -p bellhop -p bellhop-strategy-pce)
        bh="$(cd "$here/.." && pwd)/target/release/bellhop"
    fi
    touch "$run/started"
    : >"$log" # there for the `cat` below even when WAIT=0 returns before the session starts
    setsid bash -c "'$here/porep-identity.sh' --session '$bh' >'$log' 2>&1; echo \$? >'$run/status'" </dev/null &
    echo "porep-identity $size: started in $run"
fi
deadline=$((SECONDS + ${WAIT:-560}))
while [[ ! -f "$run/status" && $SECONDS -lt $deadline ]]; do sleep 5; done
cat "$log"
[[ -n "${OUT:-}" ]] && mkdir -p "$OUT" && cp "$log" "$OUT/"
if [[ -f "$run/status" ]]; then exit "$(cat "$run/status")"; fi
echo "== still running: call again with WORK=$work"
exit 2
