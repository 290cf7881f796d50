#!/usr/bin/env bash
# The GPU harness. Run ON a machine with an sm_90 GPU, from the repo root, with the binaries that
# scripts/gpu-pack.sh built here in .carry/ (the device tool: `bash scripts/gpu-run.sh`, carry
# [".carry"]). Runs, each step under a time limit, the whole well inside 8 minutes:
#   nvidia-smi; the gpu-labelled tests (CUDA vs simulation bit for bit, the property catalogue against
#   cuda-recurrent); compute-sanitizer memcheck, racecheck and initcheck on the named CUDA-vs-simulation
#   cases (every kernel variant); the decode benchmark.
# Writes to $OUT (default .carry/results): gpu-run.log (everything), decode_bench.json and
# decode_bench.md (the benchmark), summary.json and summary.md (date, GPU, command, each step's exit
# status and seconds). Exits non-zero when a step failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-.carry/results}
mkdir -p "$out"
bin=.carry/bin
[ -x "$bin/cuda_vs_sim_test" ] || { echo "gpu-run: no $bin: run scripts/gpu-pack.sh first and carry .carry" >&2; exit 2; }
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The CUDA tools, wherever this image keeps them.
for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer /opt/nvidia/*/compute-sanitizer; do
  [ -d "$d" ] && PATH="$PATH:$d"
done
export PATH
exec > >(tee "$out/gpu-run.log") 2>&1
tee_pid=$!

command="$0 $*"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
steps=()
failed=0

# step NAME SECONDS COMMAND...: runs COMMAND under `timeout`, records its exit status and duration.
step() {
  local name=$1 limit=$2 start=$SECONDS status
  shift 2
  echo
  echo "=== $name (limit ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@"
  status=$?
  echo "=== $name: exit $status after $((SECONDS - start)) s"
  [ "$status" -eq 0 ] || failed=1
  steps+=("$name $status $((SECONDS - start))")
}

# A gtest program that skipped a test (no usable GPU) fails the step.
# shellcheck disable=SC2317  # called through bash -c
no_skips() {
  local log status
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if grep -q '^\[  SKIPPED \]' "$log"; then
    echo "gpu-run: tests were skipped (no sm_90 device?)"
    status=1
  fi
  rm -f "$log"
  return "$status"
}
export -f no_skips

sanitized_cases='--gtest_filter=CudaVsSim.NamedCasesBitIdentical:CudaVsSim.MixedStateDtypes'
step nvidia-smi 20 nvidia-smi
step libraries 10 ldd "$bin/cuda_vs_sim_test" "$bin/decode_bench"
step resource-usage 20 cuobjdump --dump-resource-usage "$bin/decode_bench"
step device-test 20 bash -c 'no_skips "$@"' _ "$bin/device_test"
step cuda-vs-simulation 60 bash -c 'no_skips "$@"' _ "$bin/cuda_vs_sim_test"
step catalogue 120 env KDA_PROPERTY_CASES=100 bash -c 'no_skips "$@"' _ "$bin/cuda_catalogue_test"
for tool in memcheck racecheck initcheck; do
  step "sanitizer-$tool" 45 compute-sanitizer --tool "$tool" --error-exitcode 1 "$bin/cuda_vs_sim_test" "$sanitized_cases"
done
step benchmark 90 bash -c "set -o pipefail; '$bin/decode_bench' --json '$out/decode_bench.json' | tee '$out/decode_bench.md'"

{
  echo "# GPU run $started"
  echo
  echo "GPU: $gpu; command: \`$command\`; commit: $(cat .carry/commit 2>/dev/null || echo unknown)"
  echo
  echo "| step | exit | seconds |"
  echo "|---|---|---|"
  for s in "${steps[@]}"; do read -r n c t <<<"$s"; echo "| $n | $c | $t |"; done
} >"$out/summary.md"
{
  echo "{"
  echo "  \"date\": \"$started\","
  echo "  \"gpu\": \"$gpu\","
  echo "  \"command\": \"$command\","
  echo "  \"commit\": \"$(cat .carry/commit 2>/dev/null || echo unknown)\","
  echo "  \"steps\": ["
  for i in "${!steps[@]}"; do
    read -r n c t <<<"${steps[$i]}"
    echo "    {\"step\": \"$n\", \"exit\": $c, \"seconds\": $t}$([ "$i" -lt $((${#steps[@]} - 1)) ] && echo ,)"
  done
  echo "  ]"
  echo "}"
} >"$out/summary.json"
echo
cat "$out/summary.md"
exec >&- 2>&-
wait "$tee_pid"  # the log is complete before the files are collected
exit "$failed"
