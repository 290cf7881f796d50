#!/usr/bin/env bash
# README command 1: install, build, and run the main job on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
./build/tools/kda-oracle/kda-oracle smoke --seed 1
# A property suite: the whole catalogue against the fp32 reference, with its coverage.
./build/tools/kda-oracle/kda-oracle check --kernel ref-fp32 --cases 200 --seed 1 --coverage
# A golden file, as a kernel author would download it, and the fp32 reference judged against it.
./build/tools/kda-oracle/kda-oracle golden generate --suite smoke --out build/smoke.h5
./build/tools/kda-oracle/kda-oracle golden verify --golden build/smoke.h5 --kernel ref-fp32
