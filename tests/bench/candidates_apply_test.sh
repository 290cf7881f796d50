#!/usr/bin/env bash
# Every device candidate (bench/gpu/candidates/*.patch) still applies to the checkout's HEAD, and
# scripts/patch-ref.sh makes the same commit from it twice (so its build folder is reused): a change to the
# kernels on main that a patch conflicts with fails here, not on the next device call.
# Usage: candidates_apply_test.sh SOURCE_DIR
set -euo pipefail
cd "$1"
# Not a git checkout (a source tarball): reported to CTest as skipped (SKIP_RETURN_CODE), not as passed.
git rev-parse --git-dir >/dev/null 2>&1 || { echo "candidates_apply_test: not a git checkout"; exit 77; }
shopt -s nullglob
patches=(bench/gpu/candidates/*.patch)
status=0
for patch in "${patches[@]}"; do
  if first=$(bash scripts/patch-ref.sh "$patch" 2>/dev/null) && second=$(bash scripts/patch-ref.sh "$patch"); then
    [ "$first" = "$second" ] || { echo "FAIL $patch: two commits, $first and $second"; status=1; continue; }
    echo "ok   $patch -> $first"
  else
    echo "FAIL $patch: does not apply to HEAD (remake it: git diff main BRANCH, or drop it)"
    status=1
  fi
done
echo "${#patches[@]} candidate patches checked"
exit $status
