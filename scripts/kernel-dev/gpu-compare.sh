#!/usr/bin/env bash
# gpu-compare.sh [ROUNDS]: on the device (carry [$KDA_COMPARE_PACK], by default build-compare/compare.tgz,
# from scripts/kernel-dev/gpu-compare-pack.sh), each packed build's CUDA-vs-simulation cases (KDA_COMPARE_TESTS, a gtest
# filter; by default stage B's transposed and double-buffered forms), then `prefill_bench --reps 20
# --timing-only` of every build in turn, ROUNDS times (2 by default), so that the device's drift falls on
# every build alike. Prints the benchmark table's rows and the prepare kernel's phase rows (so that builds
# that change different phases can be told apart in one build), each tagged with its build and round; exits
# non-zero if a build's cases failed. KDA_COMPARE_ONLY (an extended regex on the builds' folder names,
# <n>-<REF>-<commit>) runs some of a pack's builds, so that a pack too long for one call splits over two.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
rounds=${1:-2}
filter=${KDA_COMPARE_TESTS:-*/transposed:*/double_buffered}
dir=$(mktemp -d)
tar -C "$dir" -xzf "${KDA_COMPARE_PACK:-build-compare/compare.tgz}" || exit 1
export LD_LIBRARY_PATH=$dir/lib
builds=$(cd "$dir" && printf '%s\n' [0-9]*-* | sort -n | grep -E "${KDA_COMPARE_ONLY:-.}")
[ -n "$builds" ] || { echo "gpu-compare: no build of the pack matches KDA_COMPARE_ONLY='${KDA_COMPARE_ONLY:-}'"; exit 1; }
status=0
for b in $builds; do
  echo "== $b: chunked_cuda_vs_sim_test --gtest_filter='$filter'"
  "$dir/$b/chunked_cuda_vs_sim_test" --gtest_brief=1 --gtest_filter="$filter" >"$dir/$b.tests" 2>&1 ||
    { status=1; echo "FAILED"; }
  tail -n 3 "$dir/$b.tests"
  grep -q 'SKIPPED' "$dir/$b.tests" && { status=1; echo "cases skipped: no CUDA device?"; }
done
echo "== prefill_bench --reps 20 --timing-only: build, round, then the table's row (packing | tokens | stage A" \
  "| of which gates | stage B | total | TFLOP/s | ...), then 'phases' and the prepare kernel's phase row (packing |" \
  "inputs | l2norm | diagonal sub-blocks | decay chains | off-diagonal | right-hand sides, diagonal inverses |" \
  "inverse's levels | products and stores: share (ms))"
for r in $(seq "$rounds"); do
  for b in $builds; do
    if "$dir/$b/prefill_bench" --reps 20 --timing-only >"$dir/$b.bench" 2>&1; then
      grep -E '^\| [0-9x,]+ \| [0-9]+ \|' "$dir/$b.bench" | sed "s/^/$b r$r /"
      grep -E '^\| [0-9x,]+ \| [0-9]+% \(' "$dir/$b.bench" | sed "s/^/$b r$r phases /"
    else
      status=1
      echo "$b r$r: prefill_bench failed:"
      tail -n 3 "$dir/$b.bench"
    fi
  done
done
exit $status
