#!/usr/bin/env bash
# ref-build.sh REF TARGET...: builds TARGET... of the committed git REF in a worktree and build folder of its
# own, build-compare/<commit>/{src,build}, kept for reuse (a second build of the same commit only
# relinks what changed).
# Progress goes to stderr; the last line on stdout is the build folder.
# (scripts/kernel-dev/gpu-compare-pack.sh, scripts/kernel-dev/sim-fingerprint.sh.)
set -euo pipefail
cd "$(dirname "$0")/../.."
ref=$1
shift
commit=$(git rev-parse --short=9 "$ref^{commit}")
src=build-compare/$commit/src build=build-compare/$commit/build
if [ -d "$src" ]; then
  git -C "$src" checkout -q --detach "$commit"
else
  mkdir -p "build-compare/$commit"
  git worktree prune  # a worktree whose folder was deleted would block the path
  git worktree add -q --detach "$src" "$commit"
fi
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDA_ENABLE_CUDA=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; exit 1; }
echo "ref-build: $ref ($commit): $*" >&2
cmake --build "$build" -j"$(nproc)" --target "$@" >&2
echo "$build"
