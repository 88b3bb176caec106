#!/usr/bin/env bash
# Issue 33's 32 GiB runs in one lease of one H200, one after the other in a session of
# their own that outlives a call, all in WORK (they share the synthetic inputs and pce's
# cache): porep32-budgets.sh (resident, then each of BUDGETS), porep32-cuzk.sh (cuzk
# beside it, same input), porep32-daemon.sh (the same proof through `bellhop serve`).
#
#   WORK=/tmp/p32 OUT=$OUT .device-bundle/porep32-lease.sh
#
# Called again with the same WORK, it waits up to WAIT seconds (560), then copies each
# started step's archive as it stands to OUT (budgets.tgz, cuzk.tgz, daemon-32GiB.tgz), so
# a lease that ends early still brings back what it ran. The environment passes on to the
# steps (BUDGETS, RUNS, COUNT, PROOFS, ...); STEPS names the steps to run, in order (all three).
set -euo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
work="${WORK:?set WORK to a directory kept between calls}"
out="${OUT:?set OUT to where results go}"
mkdir -p "$work" "$out"
export WORK="$work"
if [[ ! -f "$work/lease.started" ]]; then
    touch "$work/lease.started"
    setsid bash -c "for step in ${STEPS:-budgets cuzk daemon}; do
            echo \"== \$(date -u +%H:%M:%S) \$step\"
            OUT='$work/lease-out' WAIT=100000 '$bundle/porep32-'\$step.sh || echo \"== \$step failed: \$?\"
        done; touch '$work/lease.ended'" </dev/null >"$work/lease.log" 2>&1 &
fi
deadline=$((SECONDS + ${WAIT:-560}))
while [[ ! -f "$work/lease.ended" && $SECONDS -lt $deadline ]]; do sleep 5; done
# A step's marker says it has started; called with WAIT=0 it only copies its archive.
for step in budgets:started cuzk:cuzk/started "daemon:daemon-${SIZE:-32GiB}/started"; do
    [[ -f "$work/${step#*:}" ]] && WAIT=0 "$bundle/porep32-${step%%:*}.sh" >/dev/null 2>&1 || true
done
tar -czf "$out/lease.tgz" -C "$work" lease.log
cat "$work/lease.log"
df -h --output=avail "$work" | tail -1
[[ -f "$work/lease.ended" ]] && echo "== lease ended" || echo "== still running: call again with the same WORK"
