#!/usr/bin/env bash
# Unpacks flash-linear-attention (fla-core 0.6.0) and the pure-Python packages it imports at import time
# (einops, which fla-core requires, and packaging, which it imports without requiring it) into
# .carry/python, for scripts/fla-run.sh on the GPU machine (which has torch, triton, numpy and h5py but
# no internet). Wheels are taken from $FLA_WHEELS (default /tmp/wheels) and downloaded there with pip
# when absent. scripts/gpu-pack.sh calls this after it has filled .carry/bin (docs/fla.md).
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=${FLA_WHEELS:-/tmp/wheels}
dest=.carry/python
python=${PYTHON:-python3}
mkdir -p "$wheels"
rm -rf "$dest"
mkdir -p "$dest"
# requirement, then the glob of its wheel's file name
for spec in "fla-core==0.6.0 fla_core-0.6.0-py3-none-any.whl" "einops==0.8.2 einops-0.8.2-py3-none-any.whl" \
            "packaging==26.4 packaging-26.4-py3-none-any.whl"; do
  read -r requirement wheel <<<"$spec"
  if [ ! -f "$wheels/$wheel" ]; then
    "$python" -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" "$requirement"
  fi
  "$python" -m zipfile -e "$wheels/$wheel" "$dest"
done
du -sh "$dest"
