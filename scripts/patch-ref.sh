#!/usr/bin/env bash
# patch-ref.sh PATCH [BASE]: a commit that is BASE (HEAD by default) with PATCH applied, made without
# touching the work tree, the index or any branch (a temporary index; the commit is dangling, so git gc
# may drop it after some weeks, and making it again gives the same tree). Prints the commit's id. Lets a
# device candidate kept as a patch (bench/gpu/candidates/) be built, fingerprinted and packed as any ref.
set -euo pipefail
patch=$(realpath -e -- "$1") || { echo "patch-ref: no file $1" >&2; exit 2; }  # before the cd: relative to the caller
base=${2:-HEAD}
cd "$(dirname "$0")/.."
index=$(mktemp)
trap 'rm -f "$index"' EXIT
export GIT_INDEX_FILE=$index
git read-tree "$base"
git apply --cached "$patch" || { echo "patch-ref: $patch does not apply to $base" >&2; exit 1; }
tree=$(git write-tree)
# Fixed author and date: the same patch on the same base gives the same commit, so its build folder is reused.
GIT_AUTHOR_NAME=patch-ref GIT_AUTHOR_EMAIL=patch-ref@localhost GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" \
  GIT_COMMITTER_NAME=patch-ref GIT_COMMITTER_EMAIL=patch-ref@localhost GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
  git commit-tree "$tree" -p "$(git rev-parse "$base^{commit}")" -m "$(basename "$patch") on $base"
