#!/usr/bin/env bash
# The GPU harness. Run ON a machine with an sm_90 GPU, from the repo root, with the binaries that
# scripts/gpu-pack.sh built here in .carry/ (the device tool: `bash scripts/gpu-run.sh [PART...]`,
# carry [".carry"]). Each step runs under a time limit. PARTs (default: all three; one device call
# runs at most 10 minutes, so run them in two calls when the benchmarks are slow):
#   decode   the token-serial kernel: the gpu-labelled tests (CUDA vs simulation bit for bit, the
#            property catalogue against cuda-recurrent and against the example plugin wrapping it),
#            compute-sanitizer memcheck, racecheck, initcheck and synccheck on the named CUDA-vs-
#            simulation cases (every kernel variant, index-table verify calls included), the decode
#            benchmark (decode, then verify throughput at num_spec = 3 and 7) and an Nsight Compute
#            profile of one decode launch
#   prefill  the chunked kernel: the tensor core's tf32 operand contract, CUDA vs simulation within its bound, the catalogue against
#            cuda-chunked, the four sanitizers on its named cases, its resource usage and HMMA count,
#            the prefill benchmark
#   anchors  FLA's kernels timed at the same shapes (bench/gpu/fla_anchor.py), the in-run anchor; with
#            prefill in the same run, also our prefill against it (bench/gpu/anchor_ratios.py)
#   reference  the CPU reference's speed on the host's cores (bench/reference_bench.cpp: per-core rates
#            and thread scaling up to 16 threads); not in the default set: `bash scripts/gpu-run.sh reference`
# Writes to $OUT (default .carry/results): gpu-run.log (everything), decode_bench.{json,md},
# prefill_bench.{json,md}, reference_bench.{json,md}, fla_anchor.{json,md}, anchor_ratios.{json,md}, summary.json and summary.md (date, GPU, command,
# each step's exit status and seconds). Exits non-zero when a step failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-.carry/results}
mkdir -p "$out"
source scripts/gpu-unpack.sh
bin=.carry/bin
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The CUDA tools, wherever this image keeps them.
for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer /opt/nvidia/*/compute-sanitizer /opt/nvidia/nsight-compute/*; do
  [ -d "$d" ] && PATH="$PATH:$d"
done
export PATH
exec > >(tee "$out/gpu-run.log") 2>&1
tee_pid=$!

command="$0 $*"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
# shellcheck source=scripts/steps.sh
source scripts/steps.sh

# A gtest program that skipped a test (no usable GPU) or ran none (a filter that matches nothing) fails the step.
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
  if grep -q '^\[==========\] Running 0 tests' "$log"; then
    echo "gpu-run: the filter selected no test"
    status=1
  fi
  rm -f "$log"
  return "$status"
}
export -f no_skips

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(decode prefill anchors)

decode_part() {
  local sanitized_cases='--gtest_filter=CudaVsSim.NamedCasesBitIdentical:CudaVsSim.MixedStateDtypes:CudaVsSim.PaddedStateRows'
  step resource-usage 20 cuobjdump --dump-resource-usage "$bin/decode_bench"
  step cuda-vs-simulation 60 bash -c 'no_skips "$@"' _ "$bin/cuda_vs_sim_test"
  step catalogue 120 env KDA_PROPERTY_CASES=100 bash -c 'no_skips "$@"' _ "$bin/gpu_catalogue_test" \
    '--gtest_filter=*/cuda_recurrent__*'
  # The example plugin through kda-oracle's device staging, and a plugin's planted stray device writes located.
  step cuda-plugin 20 env KDA_CUDA_PLUGIN="$PWD/$bin/cuda_plugin.so" \
    KDA_STRAY_WRITE_PLUGIN="$PWD/$bin/stray_device_write_plugin.so" bash -c 'no_skips "$@"' _ "$bin/cuda_plugin_test"
  # The example plugin and the chunked kernel take no verify call: the verify properties would only skip.
  step cuda-plugin-catalogue 120 env KDA_PROPERTY_CASES=50 KDA_CUDA_PLUGIN="$PWD/$bin/cuda_plugin.so" \
    bash -c 'no_skips "$@"' _ "$bin/gpu_catalogue_test" '--gtest_filter=*/cuda_plugin__*:-*__verify_*'
  for tool in memcheck racecheck initcheck synccheck; do
    step "sanitizer-$tool" 45 compute-sanitizer --tool "$tool" --error-exitcode 1 "$bin/cuda_vs_sim_test" "$sanitized_cases"
  done
  step benchmark 150 bash -c "set -o pipefail; '$bin/decode_bench' --json '$out/decode_bench.json' | tee '$out/decode_bench.md'"
  # Hardware counters of one default decode launch (N = 64, the first size; ncu replays it): DRAM
  # throughput and where the memory pipeline stalls. Firecracker runtimes only (H200.md); gVisor refuses.
  step decode-profile 120 ncu --clock-control none -k regex:token_serial_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
    "$bin/decode_bench" --reps 5
}

prefill_part() {
  step chunked-resource-usage 20 cuobjdump --dump-resource-usage "$bin/prefill_bench"
  step chunked-tensor-core-instructions 20 bash -c "cuobjdump -sass '$bin/prefill_bench' | grep -oE 'HG?MMA' | sort | uniq -c"
  step tensor-core-model 60 bash -c 'no_skips "$@"' _ "$bin/tensor_core_hardware_test"
  step chunked-cuda-vs-simulation 300 bash -c 'no_skips "$@"' _ "$bin/chunked_cuda_vs_sim_test"
  step chunked-catalogue 240 env KDA_PROPERTY_CASES=100 bash -c 'no_skips "$@"' _ "$bin/gpu_catalogue_test" \
    '--gtest_filter=*/cuda_chunked__*:-*__verify_*'
  for tool in memcheck racecheck initcheck synccheck; do
    step "chunked-sanitizer-$tool" 90 compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$bin/chunked_cuda_vs_sim_test" '--gtest_filter=*ChunkedCudaVsSim.NamedCases*'
  done
  step prefill-benchmark 300 bash -c "set -o pipefail; '$bin/prefill_bench' --json '$out/prefill_bench.json' | tee '$out/prefill_bench.md'"
}

anchors_part() {
  step fla-anchor 300 env PYTHONPATH="$PWD/.carry/python" TRITON_CACHE_DIR="${TMPDIR:-/tmp}/kda-triton-cache" \
    bash -c "set -o pipefail; python3 bench/gpu/fla_anchor.py --json '$out/fla_anchor.json' | tee '$out/fla_anchor.md'"
}

reference_part() {
  step reference-benchmark 300 bash -c "set -o pipefail; '$bin/reference_bench' --benchmark_out='$out/reference_bench.json' \
    --benchmark_out_format=json --benchmark_color=false | tee '$out/reference_bench.md'"
}

step nvidia-smi 20 nvidia-smi
step libraries 10 ldd "$bin/cuda_vs_sim_test" "$bin/decode_bench"
step device-test 20 bash -c 'no_skips "$@"' _ "$bin/device_test"
for part in "${parts[@]}"; do
  case $part in
    decode) decode_part ;;
    prefill) prefill_part ;;
    anchors) anchors_part ;;
    reference) reference_part ;;
    *) echo "gpu-run: unknown part '$part' (decode, prefill, anchors, reference)"; failed=1 ;;
  esac
done
# With both prefill and anchors in this run: our prefill against FLA's, and issue 8's targets as ratios.
if [[ " ${parts[*]} " == *" prefill "* && " ${parts[*]} " == *" anchors "* ]]; then
  step anchor-ratios 20 bash -c "set -o pipefail; python3 bench/gpu/anchor_ratios.py '$out/prefill_bench.json' \
    '$out/fla_anchor.json' --json '$out/anchor_ratios.json' | tee '$out/anchor_ratios.md'"
fi

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
