#!/usr/bin/env bash
# README command 2: install, build, and run every test: the Release build (CUDA compiled when nvcc
# is present; gpu-labelled tests skip without a device), then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer in a second, Debug (-O0) build directory, which must
# also regenerate the committed golden/smoke.h5 byte for byte (numerics independent of -O), then a
# short run of every libFuzzer target (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
start=$SECONDS

bash scripts/build.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)"

bash scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DKDA_SANITIZE=ON -DKDA_ENABLE_CUDA=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L unit --output-on-failure -j"$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -R '^golden\.smoke_matches_committed$' --output-on-failure

bash scripts/fuzz.sh

echo "test-all: every suite green in $((SECONDS - start)) s"
