#!/usr/bin/env bash
# carry-libs.sh DEST BIN...: copies into DEST the shared libraries the programs BIN... load beyond the
# C/C++ runtime and the driver, which the GPU image has in its own (newer) versions: what the device tool
# must carry beside them (scripts/gpu-pack.sh, scripts/kernel-dev/gpu-compare-pack.sh).
set -euo pipefail
dest=$1
shift
mkdir -p "$dest"
for bin in "$@"; do ldd "$bin"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" "$dest"/; done
