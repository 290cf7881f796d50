#!/usr/bin/env bash
# Unpacks the modules of vLLM 0.33.0 that adapters/vllm/vllm_adapter.py loads (the Kimi-K3 NVIDIA Triton
# KDA ops and the FLA helpers they import, about 200 KiB) into .carry/python, for the GPU machine, which
# has torch and triton but no internet. The wheel (336 MiB, its compiled extensions built for torch
# 2.14) is taken from $VLLM_WHEELS (default /tmp/wheels) and downloaded there with pip when absent.
# Nothing else of vLLM is carried: the adapter stubs the packages above these modules (docs/conformance-vllm-flashinfer.md).
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=${VLLM_WHEELS:-/tmp/wheels}
wheel=vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl
dest=.carry/python
python=${PYTHON:-python3}
if [ ! -f "$wheels/$wheel" ]; then
  mkdir -p "$wheels"
  "$python" -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" vllm==0.33.0
fi
kda=vllm/models/kimi_k3/nvidia/ops/third_party/kda
fla=vllm/third_party/flash_linear_attention/ops
modules=(
  "$kda/__init__.py" "$kda/chunk.py" "$kda/chunk_intra.py" "$kda/chunk_intra_token_parallel.py"
  "$kda/fused_recurrent.py"
  "$fla/op.py" "$fla/utils.py" "$fla/index.py" "$fla/cumsum.py" "$fla/l2norm.py" "$fla/chunk_delta_h.py"
  vllm/utils/math_utils.py
)
rm -rf "$dest/vllm"
mkdir -p "$dest"
unzip -q -o "$wheels/$wheel" "${modules[@]}" -d "$dest"
du -sh "$dest/vllm"
