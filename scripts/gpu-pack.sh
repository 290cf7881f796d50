#!/usr/bin/env bash
# Builds the GPU binaries here (sm_90a, in build-gpu/) and packs what scripts/gpu-run.sh needs into the
# git-ignored .carry/: bin/ (the gpu-labelled test programs and decode_bench) and lib/ (the shared
# libraries they load beyond the C/C++ runtime and the driver: the CUDA runtime, OpenMP). Then, with the
# device tool: run `bash scripts/gpu-run.sh` with carry [".carry"] (docs/cuda-decode.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-gpu
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDA_ENABLE_CUDA=ON >"$dir.configure.log" 2>&1 ||
  { cat "$dir.configure.log"; exit 1; }
grep -q "CUDA kernels ON" "$dir.configure.log" || { echo "gpu-pack: nvcc not found, no CUDA build" >&2; exit 1; }
cmake --build "$dir" -j"$(nproc)" --target device_test cuda_vs_sim_test cuda_catalogue_test decode_bench

rm -rf .carry
mkdir -p .carry/bin .carry/lib
cp "$dir"/tests/gpu/{device_test,cuda_vs_sim_test,cuda_catalogue_test} "$dir"/bench/gpu/decode_bench .carry/bin/
# The GPU image has its own (newer) glibc, libstdc++ and driver: those stay behind.
for bin in .carry/bin/*; do ldd "$bin"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" .carry/lib/; done
git describe --always --dirty >.carry/commit 2>/dev/null || true
du -sh .carry
ls .carry/bin .carry/lib
