#!/usr/bin/env bash
# Builds the GPU binaries here (sm_90a, in build-gpu/) and packs what scripts/gpu-run.sh needs into the
# git-ignored .carry/: bin/ (the gpu-labelled test programs, the benchmarks, the CUDA example plugin, the
# test plugin with planted stray device writes and kda-oracle), lib/ (the shared libraries they load
# beyond the C/C++ runtime and the driver: the CUDA runtime, OpenMP, HDF5) and python/ (FLA and what
# it imports beyond the GPU image's torch and triton: scripts/fla-pack.sh). Then, with the device tool:
# run `bash scripts/gpu-run.sh` and `bash scripts/fla-run.sh` with carry [".carry"] (docs/cuda-decode.md,
# docs/fla.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-gpu
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDA_ENABLE_CUDA=ON >"$dir.configure.log" 2>&1 ||
  { cat "$dir.configure.log"; exit 1; }
grep -q "CUDA kernels ON" "$dir.configure.log" || { echo "gpu-pack: nvcc not found, no CUDA build" >&2; exit 1; }
targets=(device_test cuda_vs_sim_test gpu_catalogue_test cuda_plugin_test cuda_plugin stray_device_write_plugin
         chunked_cuda_vs_sim_test tensor_core_hardware_test decode_bench prefill_bench reference_bench kda-oracle)
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"

rm -rf .carry
mkdir -p .carry/bin .carry/lib
cp "$dir"/tests/gpu/{device_test,cuda_vs_sim_test,cuda_plugin_test} "$dir"/tests/catalogue/gpu_catalogue_test .carry/bin/
cp "$dir"/tests/gpu/{chunked_cuda_vs_sim_test,tensor_core_hardware_test,stray_device_write_plugin.so} .carry/bin/
cp "$dir"/bench/gpu/{decode_bench,prefill_bench} "$dir"/bench/reference_bench "$dir"/adapters/examples/cuda_plugin/cuda_plugin.so \
  "$dir"/tools/kda-oracle/kda-oracle .carry/bin/
strip --strip-unneeded .carry/bin/*  # the device tool carries at most 64 MiB
bash scripts/carry-libs.sh .carry/lib .carry/bin/*
bash scripts/fla-pack.sh
bash scripts/pack-sglang.sh  # SGLang's KDA files, Helion (docs/conformance-sglang.md)
bash scripts/pack-vllm.sh  # after fla-pack.sh, which empties .carry/python
git describe --always --dirty >.carry/commit 2>/dev/null || true
ls .carry/bin .carry/lib
# The device tool carries at most 64 MiB: one gzip archive (scripts/gpu-unpack.sh opens it there).
tar -C .carry -czf .carry/pack.tgz bin lib python
rm -rf .carry/bin .carry/lib .carry/python
du -sh .carry
