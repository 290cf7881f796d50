#!/usr/bin/env bash
# gpu-compare-pack.sh [REF...]: builds chunked_cuda_vs_sim_test and prefill_bench (sm_90a) of each git REF
# (a commit, branch or tag; HEAD if none: committed code only) in a worktree and build folder of its own under
# build-compare/<commit>/ (scripts/kernel-dev/ref-build.sh), kept for reuse, and packs the builds, a folder each
# named <n>-<REF>-<commit> in the order given, with the libraries they load, into $KDA_COMPARE_PACK
# (build-compare/compare.tgz by default). Then, with the device tool and carry [that file]: `bash
# scripts/kernel-dev/gpu-compare.sh`, with the same KDA_COMPARE_PACK (docs/cuda-prefill.md, "Comparing builds").
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || set -- HEAD
root="build-compare"
rm -rf "$root/pack"
mkdir -p "$root/pack"
n=0
for ref in "$@"; do
  n=$((n + 1))
  build=$(bash scripts/kernel-dev/ref-build.sh "$ref" chunked_cuda_vs_sim_test prefill_bench | tail -n 1)
  commit=$(basename "$(dirname "$build")")  # build-compare/<commit>/build
  grep -q "CUDA kernels ON" "$build.configure.log" || { echo "gpu-compare-pack: nvcc not found" >&2; exit 1; }
  out=$root/pack/$n-$(printf '%s' "$ref" | tr -c 'A-Za-z0-9._' '_')-$commit
  mkdir -p "$out"
  cp "$build/tests/gpu/chunked_cuda_vs_sim_test" "$build/bench/gpu/prefill_bench" "$out/"
  strip --strip-unneeded "$out"/*  # the device tool carries at most 64 MiB
done
bash scripts/carry-libs.sh "$root/pack/lib" "$root"/pack/*-*/*
pack=${KDA_COMPARE_PACK:-$root/compare.tgz}
tar -C "$root/pack" -czf "$pack" .
rm -rf "$root/pack"
du -h "$pack"
