#!/usr/bin/env bash
# Installs NVIDIA's CUDA 13.0 compiler (nvcc, the runtime headers and static runtime)
# from PyPI into a cache directory, so that any x86-64 Linux machine, CI included, can
# compile the CUDA backend without a CUDA toolkit or a GPU.
#
#   scripts/cuda-toolchain.sh            # install (once) and print the environment
#   eval "$(scripts/cuda-toolchain.sh)"  # install and export it into this shell
#
# The directory is $BELLHOP_CUDA_HOME, else ${XDG_CACHE_HOME:-~/.cache}/bellhop/cuda13.
# A machine that already has nvcc 13 on PATH is left alone.
set -euo pipefail

if command -v nvcc >/dev/null 2>&1 && nvcc --version | grep -q "release 13\."; then
    echo "# nvcc 13 is already on PATH: $(command -v nvcc)" >&2
    exit 0
fi

home="${BELLHOP_CUDA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/bellhop/cuda13}"
python="${PYTHON:-python3}"
stamp="$home/.installed-13.0"

if [[ ! -f "$stamp" ]]; then
    echo "# installing NVIDIA's CUDA 13.0 compiler wheels into $home (about 1 GB, once)" >&2
    "$python" -m venv "$home"
    # nvvm is pinned too: pip otherwise pulls a newer one that nvcc 13.0 cannot use.
    "$home/bin/pip" install --quiet --disable-pip-version-check \
        "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*" \
        "nvidia-cuda-cccl==13.0.*" "nvidia-nvvm==13.0.*" >&2
    touch "$stamp"
fi

cuda="$(echo "$home"/lib/python3*/site-packages/nvidia/cu13)"
[[ -x "$cuda/bin/nvcc" ]] || { echo "error: no nvcc under $cuda; remove $home and run again" >&2; exit 1; }
ln -sfn lib "$cuda/lib64" # nvcc.profile looks for lib64

echo "export PATH=\"$cuda/bin:\$PATH\" CUDA_PATH=\"$cuda\" LIBRARY_PATH=\"$cuda/lib\${LIBRARY_PATH:+:\$LIBRARY_PATH}\""
