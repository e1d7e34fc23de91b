#!/usr/bin/env bash
# Install the Debian 12 packages tensorpath needs (only those missing). Safe to run again.
# Do not add rdma-core: it drags udev/systemd upgrades and nothing here needs it.
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config
      libsimgrid-dev libboost-graph-dev nlohmann-json3-dev libfmt-dev catch2
      libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils rdmacm-utils
      libopenmpi-dev openmpi-bin zlib1g-dev libprotobuf-dev protobuf-compiler libns3-dev
      libmimalloc-dev
      python3-matplotlib python3-nbformat python3-ipykernel jupyter-nbconvert
      clang)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
