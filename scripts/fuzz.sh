#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang into build-fuzz/ (installs nothing: scripts/setup.sh
# does) and runs each for FUZZ_SECONDS (default 60) on a copy of its committed corpus fuzz/corpus/<target>/,
# printing executions and coverage. Every input that crashes, leaks, times out (10 s) or runs out of
# memory is kept in build-fuzz/artifacts/ and replayed: the run fails on any committed input (the
# corpus holds none that fails: such a failure is a regression) and on any whose report points into
# our code, and lists those whose report points into libhdf5 (not instrumented; docs/reliability.md).
# Usage: scripts/fuzz.sh [TARGET ...]   (default: contract hdf5_readers exec_protocol)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
((${#targets[@]})) || targets=(contract hdf5_readers exec_protocol)
start=$SECONDS

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DKDA_ENABLE_CUDA=OFF -DKDA_BUILD_FUZZERS=ON >build-fuzz.configure.log 2>&1 ||
  { cat build-fuzz.configure.log; exit 1; }
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
echo "fuzz: built in $((SECONDS - start)) s"

# Where a replayed report points: "libhdf5 <function>" when the first frame of its first stack that is
# ours (a source line in this repository) or libhdf5's is libhdf5's and, for a bad access, the buffer
# was not allocated by our code; "ours" otherwise.
blame() {
  awk -v root="$PWD/" '
    function ours() { return index($NF, root) == 1 && $NF ~ /:[0-9]+(:[0-9]+)?$/ }
    /^ +#[0-9]+ / && state == 0 { if ($0 ~ /libhdf5/) state = 1; else if (ours()) state = 2 }
    state == 1 && / in H5/ && name == "" { name = $4 }
    /allocated by/ { alloc = 1 }
    alloc && /^ +#[0-9]+ / && owner == "" { if ($0 ~ /libhdf5/) owner = "libhdf5"; else if (ours()) owner = "ours" }
    END { print (state == 1 && owner != "ours") ? "libhdf5 " (name == "" ? "?" : name) : "ours" }'
}

artifacts=build-fuzz/artifacts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR="$work"  # the hdf5 target's input files too (one that crashed stays until this exits)
rm -rf "$artifacts"
mkdir -p "$artifacts"
ours=0
for target in "${targets[@]}"; do
  cp -r "fuzz/corpus/$target" "$work/$target"  # libFuzzer adds what it finds here, not to the repository
  # Fork mode goes on after a failing input and exits with the status of its last job: whether it ran
  # to the end is read from its log, and the inputs it kept are judged below.
  "build-fuzz/fuzz/fuzz_$target" "$work/$target" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$seconds" -timeout=10 -artifact_prefix="$artifacts/$target-" >"$work/$target.log" 2>&1 || true
  grep -q '^INFO: exiting:' "$work/$target.log" || {
    tail -n 40 "$work/$target.log"
    echo "fuzz: $target: libFuzzer did not run to its end"
    exit 1
  }
  stats=$(grep -E '^#[0-9]+: cov:' "$work/$target.log" | tail -n 1)
  echo "fuzz: $target: ${stats%% dft_time*}"
  committed=$(sha1sum "fuzz/corpus/$target"/* | cut -c1-40)
  for input in "$artifacts/$target"-*; do
    [[ -e $input ]] || continue
    if grep -qx "${input##*-}" <<<"$committed"; then  # artifacts are named after their SHA-1
      ours=$((ours + 1))
      echo "fuzz: $target: FAILED on a committed input (a regression); replay: build-fuzz/fuzz/fuzz_$target $input"
      continue
    fi
    report=$("build-fuzz/fuzz/fuzz_$target" -timeout=10 "$input" 2>&1) && {
      echo "fuzz: $target: $(basename "$input") passes on replay (a timeout under load?)"
      continue
    }
    where=$(blame <<<"$report")
    if [[ $where == ours ]]; then
      ours=$((ours + 1))
      echo "fuzz: $target: FAILED on $input; replay: build-fuzz/fuzz/fuzz_$target $input"
    else
      echo "fuzz: $target: $(basename "$input") fails inside libhdf5 (${where#libhdf5 }), not in our code"
    fi
  done
done
((ours == 0)) || { echo "fuzz: $ours input(s) break our code"; exit 1; }
echo "fuzz: no input breaks our code; ${#targets[@]} target(s) in $((SECONDS - start)) s"
