#!/usr/bin/env bash
# Configures and builds one build directory. Usage: scripts/build.sh DIR [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >"$dir.configure.log" 2>&1 ||
  { cat "$dir.configure.log"; exit 1; }
grep -E "^-- kda-oracle" "$dir.configure.log" || true
cmake --build "$dir" -j"$(nproc)"
