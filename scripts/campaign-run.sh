#!/usr/bin/env bash
# The conformance campaign on the GPU machine: `kda-oracle campaign` over conformance/plan/, with the
# .carry that scripts/gpu-pack.sh made (kda-oracle in bin/, the Python packages under test in python/;
# the device tool: `bash scripts/campaign-run.sh` with carry [".carry"]). Resumable: the results live in
# .carry/campaign (CAMPAIGN_RESULTS), so carrying .carry back with them continues the campaign where the
# last run stopped; CAMPAIGN_BUDGET (default 420 s) starts no unit after that, and CAMPAIGN_STOP (default
# budget + 120 s) ends a unit still running then, so one run stays inside a 10-minute device call (exit
# status 3: rerun to continue; an unfinished unit reruns). When $OUT is set, the results folder, report
# included, goes there as one archive, campaign.tgz (the device tool brings back at most 8 files), with
# the report's conformance.md beside it; unpack it into .carry/ here to continue the campaign.
# Arguments are passed on to `kda-oracle campaign` (e.g. --scales small or --recurrent-cases 20).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=scripts/gpu-unpack.sh
source scripts/gpu-unpack.sh
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/.carry/python${PYTHONPATH:+:$PYTHONPATH}"
export TRITON_CACHE_DIR="${TMPDIR:-/tmp}/kda-triton-cache" TRITON_CACHE_AUTOTUNING=1
results=${CAMPAIGN_RESULTS:-.carry/campaign}
budget=${CAMPAIGN_BUDGET:-420}
timeout --kill-after=10 "${CAMPAIGN_STOP:-$((budget + 120))}" \
  .carry/bin/kda-oracle campaign --plan "${CAMPAIGN_PLAN:-conformance/plan}" --out "$results" \
  --budget "$budget" --plotter "python3 scripts/plot_failure.py" "$@"
status=$?
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  tar -C "$(dirname "$results")" -czf "$OUT/campaign.tgz" "$(basename "$results")"
  [ -f "$results/report/conformance.md" ] && cp "$results/report/conformance.md" "$OUT/"
fi
exit "$status"
