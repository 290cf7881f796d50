#!/usr/bin/env bash
# Installs everything kda-oracle needs on a Debian machine (run as root). Idempotent:
# packages already present are skipped by apt, so a second run only re-checks.
set -euo pipefail

debian_packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev
  libhdf5-dev
  librapidcheck-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libcli11-dev
  nlohmann-json3-dev  # JSON: check --results, campaign, imported calls, safetensors headers
  python3 python3-pip
  python3-h5py python3-numpy  # the golden-file interop test reads HDF5 with h5py and numpy alone
  python3-matplotlib  # scripts/plot_failure.py
  python3-yaml  # the campaign test reads the Kubernetes Job example
  clang libclang-rt-dev libomp-dev  # scripts/fuzz.sh: clang, its libFuzzer and sanitizer runtimes, its OpenMP
)

missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi
