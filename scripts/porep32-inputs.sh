#!/usr/bin/env bash
# The synthetic inputs of the 32 GiB PoRep runs on the GPU machine (porep32-sim.sh,
# porep32-daemon.sh, porep32-cuzk.sh), each made once in WORK: the C1 output (`bellhop fil
# synthetic-c1`, WORK/c1-SIZE.json, 38.7 MB at 32 GiB) and, with `params`, the parameters
# (`bellhop params synthetic`, WORK/bellhop-synthetic-porep-SIZE.params, 47 GB at 32 GiB).
#
#   porep32-inputs.sh WORK SIZE [params]
set -euo pipefail
bh="$(cd "$(dirname "$0")" && pwd)/bellhop"
work="${1:?usage: porep32-inputs.sh WORK SIZE [params]}"
size="${2:?usage: porep32-inputs.sh WORK SIZE [params]}"
log() { echo "== $(date -u +%H:%M:%S) $*"; }
mkdir -p "$work"
if [[ ! -f "$work/c1-$size.json" ]]; then
    log "synthetic C1 output"
    "$bh" fil synthetic-c1 --sector-size "$size" --seed 1 --out "$work/c1-$size.json"
fi
if [[ "${3:-}" == params && ! -f "$work/bellhop-synthetic-porep-$size.params" ]]; then
    log "synthetic parameters (disk before: $(df -h --output=avail "$work" | tail -1))"
    "$bh" params synthetic "synthetic-porep:$size" --dir "$work"
fi
