#!/usr/bin/env bash
# On the GPU machine (device tool, carry [".carry"]): Nsight Compute's source counters for the chunked
# prefill's kernels at 1 x 8192 (prefill_bench's first packing, after its warm-ups), one launch each,
# exported per SASS instruction as CSV into $OUT (scripts/kernel-dev/ncu-phases.py splits them at the barriers).
# Usage: bash scripts/kernel-dev/ncu-prefill.sh [kernel-regex ...]   (default: prepare_kernel scan_kernel gate_kernel)
#   NCU_SKIP: launches of the kernel to skip first (default 3: 1 x 8192 after its warm-ups; 9 still lands
#   in 1 x 8192 for all three kernels: the prepare kernel's grid is one block per SM whatever the packing,
#   so count its slots from the instructions of a once-a-slot SASS line); the files are named kernel-SKIP.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu-unpack.sh
export LD_LIBRARY_PATH=$PWD/.carry/lib
ncu=$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "ncu-prefill: no Nsight Compute under /opt/nvidia" >&2; exit 2; }
out=${OUT:-/tmp}
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(prepare_kernel scan_kernel gate_kernel)
skip=${NCU_SKIP:-3}
failed=0
for kernel in "${kernels[@]}"; do
  name=$kernel-$skip
  timeout 240 "$ncu" --clock-control none -k "regex:$kernel" --launch-skip "$skip" --launch-count 1 \
    --section SourceCounters --section LaunchStats --section Occupancy --section SchedulerStats \
    --section WarpStateStats -f -o "$out/$name" .carry/bin/prefill_bench --reps 1 --timing-only >"$out/$name.log" 2>&1
  [ -f "$out/$name.ncu-rep" ] || { echo "== $name: no profile (see $out/$name.log)"; tail -5 "$out/$name.log"; failed=1; continue; }
  "$ncu" --import "$out/$name.ncu-rep" --page source --print-source sass --csv >"$out/$name.csv" 2>&1
  "$ncu" --import "$out/$name.ncu-rep" --page details >"$out/$name.txt" 2>&1
  rm -f "$out/$name.ncu-rep" "$out/$name.log"
  echo "== $name: $(wc -l <"$out/$name.csv") SASS rows"
  grep -E "Duration|Grid Size|Executed Ipc|Issue Slots Busy|No Eligible|Registers Per|Achieved Occupancy" "$out/$name.txt"
done
exit $failed
