#!/usr/bin/env bash
# Installs Debian or Ubuntu packages that are missing (apt; root, or sudo); does nothing
# when all are installed.
#   scripts/apt-install.sh "what they are for" PACKAGE...
set -euo pipefail
why="$1"
shift
missing=()
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
    echo "error: $why needs ${missing[*]} (or your distribution's equivalent); this script knows only apt" >&2
    exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: installing ${missing[*]} needs root or sudo" >&2; exit 1; }
    sudo=(sudo)
fi
echo "installing ${missing[*]} ($why) with apt" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >&2
