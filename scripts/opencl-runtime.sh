#!/usr/bin/env bash
# Installs what the OpenCL backend needs to build and to run on any machine: the ICD loader
# with its link library (ocl-icd-opencl-dev; the opencl plugin links libOpenCL) and PoCL
# (pocl-opencl-icd), an OpenCL platform on the CPU, so its tests run without a GPU.
# Does nothing when both are installed. Debian or Ubuntu (apt); root, or sudo.
set -euo pipefail
exec "$(dirname "$0")/apt-install.sh" "the OpenCL backend (the ICD loader, its libOpenCL.so and PoCL)" \
    ocl-icd-opencl-dev pocl-opencl-icd
