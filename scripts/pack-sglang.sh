#!/usr/bin/env bash
# Puts into .carry/python exactly what adapters/sglang/sglang_adapter.py needs on the GPU machine (which
# has torch, triton, numpy and h5py but no internet): SGLang 0.5.23's KDA kernel files (only those, with
# no package __init__ above sglang/kernels/ops/attention: sglang_loader.py stands in for them), Helion
# 1.4.0 (the version SGLang's Helion backend names) and rich (which helion imports), plus einops and
# packaging (imported by SGLang's fla/ files) where scripts/fla-pack.sh has not put them already. Wheels
# come from $SGLANG_WHEELS (default /tmp/wheels), downloaded there with pip when absent. Run it after
# fla-pack.sh (which empties .carry/python). docs/conformance-sglang.md.
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=${SGLANG_WHEELS:-/tmp/wheels}
dest=.carry/python
python=${PYTHON:-python3}
mkdir -p "$wheels" "$dest"

wheel_of() {  # requirement, glob of its wheel's file name -> the wheel's path (downloaded when absent)
  local found
  found=$(ls "$wheels"/$2 2>/dev/null | head -n 1 || true)
  if [ -z "$found" ]; then
    "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
      --platform manylinux_2_34_x86_64 -d "$wheels" "$1" >&2
    found=$(ls "$wheels"/$2 | head -n 1)
  fi
  echo "$found"
}

# SGLang's KDA files: the Triton paths (fla/, linear/fused_sigmoid_gating_recurrent.py) and Helion's.
sglang=$(wheel_of "sglang==0.5.23" "sglang-0.5.23-*.whl")
rm -rf "$dest/sglang"
"$python" - "$sglang" "$dest" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1:]
base = "sglang/kernels/ops/attention/"
keep = lambda n: n.endswith(".py") and (
    n.startswith(base + "fla/") or n.startswith(base + "helion/")
    or n in (base + "linear/__init__.py", base + "linear/fused_sigmoid_gating_recurrent.py"))
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if keep(n)]
    z.extractall(dest, names)
print(f"sglang 0.5.23: {len(names)} KDA files", file=sys.stderr)
PY

for spec in "helion==1.4.0 helion-1.4.0-py3-none-any.whl helion" "rich==15.0.0 rich-15.0.0-py3-none-any.whl rich" \
            "einops==0.8.2 einops-0.8.2-py3-none-any.whl einops" "packaging==26.4 packaging-26.4-py3-none-any.whl packaging"; do
  read -r requirement wheel package <<<"$spec"
  [ -d "$dest/$package" ] && [ "$package" != helion ] && continue
  rm -rf "$dest/$package"
  "$python" -m zipfile -e "$(wheel_of "$requirement" "$wheel")" "$dest"
done
du -sh "$dest"
