#!/usr/bin/env bash
# README command 1: install, build, and run the main job on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
./build/tools/kda-oracle/kda-oracle smoke --seed 1
