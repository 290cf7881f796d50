#!/usr/bin/env bash
# kda-oracle against flash-linear-attention's KDA kernels (fla-core 0.6.0, Triton) through
# adapters/fla/fla_adapter.py. Run ON the GPU machine, from the repo root, with the .carry that
# scripts/gpu-pack.sh made (kda-oracle in bin/, FLA in python/; the device tool: `bash scripts/fla-run.sh`
# with carry [".carry"]). Needs python3 with torch, triton, numpy and h5py there; no network. Runs, each
# step under a time limit, the whole within about 10 minutes (docs/fla.md):
#   the environment (versions, GPU); kda-oracle check of each adapter entry over the whole catalogue
#   (a property an entry cannot take, a pool one on an entry without pools say, is reported skipped);
#   the standard golden suite, generated here and verified against each entry.
# Writes to $OUT (default .carry/results): fla-run.log (everything), fla-summary.md (each step's exit
# status and seconds, kda-oracle's tables and failures), fla-failures/<entry>/ (shrunk failing cases).
# Settings (environment): FLA_ENTRIES the adapter entries to run (default: recurrent pooled-decode verify
# chunk; their check and golden steps), FLA_CASES cases per property (default 10; 0 skips the check steps;
# FLA_CHUNK_CASES for the chunk entry, default 3: its kernels compile slowest), FLA_GOLDEN (1; 0 skips the golden steps), FLA_SEED (1), FLA_DTYPE activations of the check runs
# (bf16), FLA_HEAD_DIMS declared head dims (64,128), FLA_AUTOTUNE (0: every Triton kernel runs its
# first config, --first-config; 1: Triton autotunes as FLA ships it, minutes per new shape),
# FLA_ADAPTER_OPTIONS more adapter options (--interpret: a slow dry run of this script without a GPU),
# FLA_REALISTIC cases per property of each entry's run at `--scale realistic` (matches-reference and finite;
# default 2; 0 skips those steps).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/gpu-unpack.sh
source scripts/gpu-unpack.sh
out=${OUT:-.carry/results}
mkdir -p "$out/fla-steps"
oracle=.carry/bin/kda-oracle
if [ ! -x "$oracle" ] || [ ! -d .carry/python/fla ]; then
  echo "fla-run: no $oracle or .carry/python/fla: run scripts/gpu-pack.sh first and carry .carry" >&2
  exit 2
fi
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/.carry/python${PYTHONPATH:+:$PYTHONPATH}"
export TRITON_CACHE_DIR="${TMPDIR:-/tmp}/kda-triton-cache" TRITON_CACHE_AUTOTUNING=1
cases=${FLA_CASES:-10}
chunk_cases=${FLA_CHUNK_CASES:-3}
seed=${FLA_SEED:-1}
dtype=${FLA_DTYPE:-bf16}
dims=${FLA_HEAD_DIMS:-64,128}
extra=$([ "${FLA_AUTOTUNE:-0}" = 1 ] || echo " --first-config")${FLA_ADAPTER_OPTIONS:+ $FLA_ADAPTER_OPTIONS}
exec > >(tee "$out/fla-run.log") 2>&1
tee_pid=$!

command="$0 $*"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
STEP_LOGS=$out/fla-steps
# shellcheck source=scripts/steps.sh
source scripts/steps.sh

adapter() {  # adapter ENTRY OPTIONS...: the exec kernel
  echo "exec:python3 adapters/fla/fla_adapter.py --entry $*$extra"
}

step environment 30 python3 -c "
import torch, triton, h5py, numpy, fla
from fla.ops.kda import chunk_kda, fused_recurrent_kda
print('torch', torch.__version__, 'triton', triton.__version__, 'fla', fla.__version__, 'h5py', h5py.__version__,
      'numpy', numpy.__version__)
assert torch.cuda.is_available(), 'no CUDA device'
print(torch.cuda.get_device_name(), 'capability', torch.cuda.get_device_capability())"
check() {  # check ENTRY CASES SECONDS
  step "check-$1" "$3" "$oracle" check --kernel "$(adapter "$1" --dtype "$dtype" --head-dims "$dims")" \
    --cases "$2" --seed "$seed" --timeout 120 --save-failures "$out/fla-failures/$1"
}
# Limits from the first H200 run: about 1 s per recurrent or pooled case, 6 s per chunk case (Triton
# compiles nearly every case anew), for each of the catalogue's properties an entry takes, with room.
entries=" ${FLA_ENTRIES:-recurrent pooled-decode verify chunk} "
runs() { [[ "$entries" == *" $1 "* ]]; }  # runs ENTRY: the entry is selected
[ "$cases" -gt 0 ] && runs recurrent && check recurrent "$cases" $((20 * cases))
[ "$cases" -gt 0 ] && runs pooled-decode && check pooled-decode "$cases" $((15 * cases))
[ "$cases" -gt 0 ] && runs verify && check verify "$cases" $((15 * cases))
[ "$chunk_cases" -gt 0 ] && runs chunk && check chunk "$chunk_cases" $((90 * chunk_cases))
# Realistic shapes (many heads, head dims 64..256, thousands of tokens, decode batches at N x HV edges):
# building a case and the fp64 oracle take seconds each, FLA compiles each new shape.
realistic=${FLA_REALISTIC:-2}
check_realistic() {  # check_realistic ENTRY SECONDS
  step "realistic-$1" "$2" "$oracle" check --kernel "$(adapter "$1" --dtype "$dtype" --head-dims any)" \
    --scale realistic --properties matches-reference,finite --cases "$realistic" --seed "$seed" --timeout 300 \
    --save-failures "$out/fla-failures/$1-realistic"
}
if [ "$realistic" -gt 0 ]; then
  for entry in recurrent pooled-decode verify chunk; do
    runs "$entry" && check_realistic "$entry" $((60 * realistic))
  done
fi
[ "${FLA_GOLDEN:-1}" = 1 ] || { echo "fla-run: golden steps skipped (FLA_GOLDEN=0)"; golden_skipped=1; }

if [ -z "${golden_skipped:-}" ]; then
golden=$(mktemp "${TMPDIR:-/tmp}/fla-golden-XXXXXX.h5")
step golden-generate 20 "$oracle" golden generate --suite standard --out "$golden"
# The suite's activations are mostly f32: the f32 entries verify those, the bf16 pool entry its decode case.
runs recurrent && step golden-recurrent 45 "$oracle" golden verify --golden "$golden" \
  --kernel "$(adapter recurrent --dtype f32 --head-dims any)"
runs chunk && step golden-chunk 55 "$oracle" golden verify --golden "$golden" \
  --kernel "$(adapter chunk --dtype f32 --head-dims "$dims")"
runs pooled-decode && step golden-pooled-decode 15 "$oracle" golden verify --golden "$golden" \
  --kernel "$(adapter pooled-decode --dtype bf16 --head-dims any)"
runs verify && step golden-verify 15 "$oracle" golden verify --golden "$golden" \
  --kernel "$(adapter verify --dtype f32 --head-dims any)"
rm -f "$golden"
fi

# What each step's log says, for the summary: kda-oracle check's table and failures (each with its
# message line), golden verify's failing rows and summary line; else the log's last lines. Progress
# lines end in \r.
excerpt() {
  local lines
  lines=$(tr '\r' '\n' <"$1" | awk '
    /^property +cases/ { table = 1 }
    table && /^$/ { table = 0 }
    table { print; next }
    /^FAILED / { print; failure = 1; next }
    failure == 1 && /^$/ { failure = 2; next }
    failure == 2 { print "    " $0; failure = 0; next }
    / FAIL$/ || /^summary:/ { print }' | head -60)
  if [ -n "$lines" ]; then echo "$lines"; else tr '\r' '\n' <"$1" | tail -n 6; fi
}
{
  echo "# FLA run $started"
  echo
  echo "GPU: $gpu; command: \`$command\`; commit: $(cat .carry/commit 2>/dev/null || echo unknown)"
  echo "Settings: FLA_CASES=$cases FLA_CHUNK_CASES=$chunk_cases FLA_REALISTIC=$realistic FLA_SEED=$seed FLA_DTYPE=$dtype" \
       "FLA_HEAD_DIMS=$dims FLA_AUTOTUNE=${FLA_AUTOTUNE:-0} FLA_ADAPTER_OPTIONS=${FLA_ADAPTER_OPTIONS:-}"
  echo
  echo "| step | exit | seconds |"
  echo "|---|---|---|"
  for s in "${steps[@]}"; do read -r n c t <<<"$s"; echo "| $n | $c | $t |"; done
  for s in "${steps[@]}"; do
    read -r n _ _ <<<"$s"
    echo
    echo "## $n"
    echo
    echo '```'
    excerpt "$out/fla-steps/$n.log"
    echo '```'
  done
} >"$out/fla-summary.md"
echo
cat "$out/fla-summary.md"
exec >&- 2>&-
wait "$tee_pid"  # the log is complete before the files are collected
exit "$failed"
