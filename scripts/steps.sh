# shellcheck shell=bash disable=SC2034  # steps and failed are read by the scripts that source this
# Sourced by scripts/gpu-run.sh and scripts/fla-run.sh: their steps, each under a time limit.
# step NAME SECONDS COMMAND...: runs COMMAND under `timeout`, appends "NAME STATUS SECONDS" to `steps`
# and sets `failed` when it did not exit 0; with STEP_LOGS set, its output also goes to
# $STEP_LOGS/NAME.log.
steps=()
failed=0
step() {
  local name=$1 limit=$2 start=$SECONDS status
  shift 2
  echo
  echo "=== $name (limit ${limit}s): $*"
  if [ -n "${STEP_LOGS:-}" ]; then
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$STEP_LOGS/$name.log"
    status=${PIPESTATUS[0]}
  else
    timeout --kill-after=10 "$limit" "$@"
    status=$?
  fi
  echo "=== $name: exit $status after $((SECONDS - start)) s"
  [ "$status" -eq 0 ] || failed=1
  steps+=("$name $status $((SECONDS - start))")
}
