#!/usr/bin/env bash
# The 32 GiB PoRep C2 by simulation, on the GPU machine (docs/BENCHMARKS.md, "32 GiB PoRep
# by simulation"). Runs from the bundle scripts/gpu-bundle.sh makes:
# 1. once per WORK (porep32-inputs.sh): a synthetic C1 output and synthetic parameters of
#    the real shape, about 50 GB of disk;
# 2. `bellhop bench synthetic-porep:32GiB` on them, started in its own session so that
#    it outlives one call (a proof takes longer than a call may), with host and GPU
#    memory sampled every 5 s beside it;
# 3. waits up to WAIT seconds (540) for it and copies its files to OUT.
# Called again with the same WORK and NAME, it only waits on (steps 1 and 2 are done).
# SIZE (32GiB) is the sector size; a small one checks the script anywhere.
# NAME names the run (baseline; its files in WORK are NAME-SIZE.*); BACKEND (cuda),
# STRATEGY (baseline), BATCH (partitions synthesized together, 3) or BUDGET (host memory,
# e.g. 120GiB, from which the bench sizes the batch), LOOKAHEAD (0), RUNS (1) and WARMUP (0)
# configure it; OPTIONS adds lines to [synthesis.options] (pce keeps its recordings in WORK),
# BACKEND_OPTIONS to [backend.options] (e.g. register_host_memory = true), PLUGIN_DIR loads
# the plugins from another directory than the bundle's (an earlier build). The environment
# passes on to the bench (e.g. GLIBC_TUNABLES=glibc.malloc.hugetlb=1: malloc's large blocks
# on transparent huge pages); the log records the kernel's huge-page settings.
# COMPARE=pce runs `bellhop ab --synthesis-only` instead: STRATEGY against COMPARE on
# partitions of the same input, RUNS (12) rounds after WARMUP (1), no parameters needed.
set -euo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
bh="$bundle/bellhop"
work="${WORK:?set WORK to a directory kept between calls}"
out="${OUT:?set OUT to where results go}"
size="${SIZE:-32GiB}"
name="${NAME:-baseline}-$size"
mkdir -p "$work" "$out"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

# write_config FILE STRATEGY: the config of a run with STRATEGY.
write_config() {
    printf '[params]\ndir = "%s"\n[backend]\nplugin = "%s"\n[synthesis]\nstrategy = "%s"\n[pipeline]\nlookahead = %s\nverify = false\n' \
        "$work" "${BACKEND:-cuda}" "$2" "${LOOKAHEAD:-0}" >"$1"
    echo '[synthesis.options]' >>"$1"
    if [[ "$2" == pce ]]; then echo "cache_dir = \"$work/pce\"" >>"$1"; fi
    if [[ -n "${OPTIONS:-}" ]]; then echo "$OPTIONS" >>"$1"; fi
    if [[ -n "${BACKEND_OPTIONS:-}" ]]; then printf '[backend.options]\n%s\n' "$BACKEND_OPTIONS" >>"$1"; fi
    if [[ -n "${PLUGIN_DIR:-}" ]]; then printf '[plugins]\ndir = "%s"\n' "$PLUGIN_DIR" >>"$1"; fi
}
config="$work/$name.toml"
write_config "$config" "${STRATEGY:-baseline}"
batch_arg="--batch ${BATCH:-3}"
if [[ -n "${BUDGET:-}" ]]; then batch_arg="--budget $BUDGET"; fi
# PARAMS=memory makes the parameters in the bench's memory instead (no 47 GB file on the
# disk); the comparison synthesizes only and needs none.
params_arg=""
params_file=params
if [[ -n "${COMPARE:-}" ]]; then
    params_file=""
elif [[ "${PARAMS:-file}" == memory ]]; then
    params_file=""
    params_arg="--synthetic-params"
fi
"$bundle/porep32-inputs.sh" "$work" "$size" $params_file

if [[ -n "${COMPARE:-}" ]]; then
    write_config "$work/$name.b.toml" "$COMPARE"
    command="ab synthetic-porep:$size --input '$work/c1-$size.json' --synthesis-only --a '$config' \
        --b '$work/$name.b.toml' --runs ${RUNS:-12} --warmup ${WARMUP:-1} --report '$work/$name.ab'"
    what="ab $name: ${STRATEGY:-baseline} against $COMPARE, synthesis only"
    stdout="$work/$name.md"
else
    command="bench synthetic-porep:$size --input '$work/c1-$size.json' --runs ${RUNS:-1} --warmup ${WARMUP:-0} \
        $batch_arg $params_arg --json"
    what="bench $name: $batch_arg, lookahead ${LOOKAHEAD:-0}"
    stdout="$work/$name.json"
fi
if [[ ! -f "$work/$name.started" ]]; then
    touch "$work/$name.started"
    log "$what, $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; GLIBC_TUNABLES=${GLIBC_TUNABLES:-}; THP \
$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
    setsid bash -c "'$bh' --config '$config' $command >'$stdout' 2>'$work/$name.log' &
        echo \$! >'$work/$name.pid'; wait \$!; echo \$? >'$work/$name.rc'" </dev/null >/dev/null 2>&1 &
    # Every 5 s: seconds, host memory in use, the bench's RSS (bytes), GPU memory in use (MiB).
    setsid bash -c "while [[ ! -f '$work/$name.rc' ]]; do
        sleep 5
        [[ -f '$work/$name.pid' ]] || continue
        rss=\$(ps -o rss= -p \$(cat '$work/$name.pid') 2>/dev/null || echo 0)
        gpu=\$(nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null || echo 0)
        echo \$(date +%s) \$(free -b | awk '/Mem:/ {print \$3}') \$((rss * 1024)) \$gpu
        done >'$work/$name.memory'" </dev/null >/dev/null 2>&1 &
fi

deadline=$((SECONDS + ${WAIT:-540}))
while [[ ! -f "$work/$name.rc" && $SECONDS -lt $deadline ]]; do sleep 5; done
cp -r "$work/$name".* "$out/"
tail -n 4 "$work/$name.log"
if [[ -f "$work/$name.rc" ]]; then
    log "$name ended with status $(cat "$work/$name.rc")"
    awk 'NR == 1 || $3 > m { m = $3 } END { printf "largest sampled RSS %.1f GiB\n", m / 2^30 }' "$work/$name.memory"
    awk '$4 > m { m = $4 } END { printf "largest sampled GPU memory %.1f GiB\n", m / 1024 }' "$work/$name.memory"
else
    log "$name still running: call again with the same WORK and NAME"
fi
