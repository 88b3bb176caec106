#!/usr/bin/env bash
# nvcc for the test command's build on a machine without an NVIDIA GPU (scripts/test.sh
# sets NVCC to this file there): device code for one architecture, sm_90 (the GPU
# machine's H200), in place of the four or five that sppark's build helper and bellhop-cuda
# ask for (sm_75, sm_80, sm_90, sm_120, PTX for compute_80 and compute_100). No device code
# runs where there is no GPU; scripts/gpu-bundle.sh builds every architecture. A kernel
# file then compiles in a quarter to a third of the CPU time (docs/BENCHMARKS.md).
set -euo pipefail
args=()
dropped=0
while (($#)); do
    case $1 in
        -gencode | --generate-code)
            dropped=1
            shift 2
            ;;
        -gencode=* | --generate-code=*)
            dropped=1
            shift
            ;;
        *)
            args+=("$1")
            shift
            ;;
    esac
done
if ((dropped)); then
    args+=(-gencode arch=compute_90,code=sm_90)
fi
exec nvcc "${args[@]}"
