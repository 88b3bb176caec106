#!/usr/bin/env bash
# Installs what the OpenCL backend needs to build and to run on any machine: the ICD loader
# with its link library (ocl-icd-opencl-dev; the opencl plugin links libOpenCL) and PoCL
# (pocl-opencl-icd), an OpenCL platform on the CPU, so its tests run without a GPU.
# Does nothing when both are installed. Debian or Ubuntu (apt); root, or sudo.
set -euo pipefail

packages=(ocl-icd-opencl-dev pocl-opencl-icd)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
    echo "error: the OpenCL backend needs ${missing[*]} (or your distribution's OpenCL ICD loader," \
        "its libOpenCL.so and an OpenCL platform such as PoCL); this script knows only apt" >&2
    exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: installing ${missing[*]} needs root or sudo" >&2; exit 1; }
    sudo=(sudo)
fi
echo "installing ${missing[*]} (OpenCL loader and PoCL) with apt" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >&2
