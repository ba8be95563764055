#!/usr/bin/env bash
# Installs weft's build and test dependencies from Debian 12's packages. Idempotent: returns
# in about a second when everything is already installed.
set -euo pipefail
packages=(
  cmake ninja-build g++ make pkg-config
  llvm-19-dev libzstd-dev zlib1g-dev libedit-dev libxml2-dev libcurl4-openssl-dev
  libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev catch2 libbenchmark-dev libjemalloc-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
