#!/usr/bin/env bash
# Extracts one version of KernelBench's problem set (levels 1-3) from a
# KernelBench git repository into a folder that `kbsynth import` reads, with
# a manifest (kernelbench-version.json) that names the version, so the task
# ids say which problem set they came from (kernelbench-v0/level1/...).
#
# Usage: kernelbench-extract.sh GIT_DIR REF OUT [--version NAME] [--force]
#
#   GIT_DIR  a KernelBench clone (its work tree or its .git / bare directory)
#   REF      a branch, tag or commit of it: "v0" is the original release
#            (the problem shapes the published claims were measured on),
#            "v0.1" the July 2025 release that enlarged them; a clone that
#            has them only as origin/<REF> works too
#   OUT      the folder to write: OUT/level1, level2, level3 and the
#            manifest. Keep it outside any repository's tree: the problems
#            are KernelBench's (MIT), read from a path, not copied in
#   --version NAME   the version the manifest names (default: REF); it
#            becomes part of every task id, so [A-Za-z0-9_.-] only
#   --force  replace an OUT that is not empty
#
# The manifest (docs/kbsynth.md, "KernelBench versions"):
#   {"format": "kb-kernelbench-version", "version": "v0", "ref": "v0",
#    "commit": "<40 hex>", "commit_date": "...", "repository": "<GIT_DIR>",
#    "extracted_at": "...", "problems": {"level1": 100, ...}}
# Plain shell and git: nothing here needs Python.
set -euo pipefail

usage() { sed -n '/^# Usage:/,/^# Plain shell/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "kernelbench-extract: $*" >&2; exit 2; }

[ $# -ge 3 ] || usage
GIT_DIR_IN="$1"; REF="$2"; OUT="$3"; shift 3
VERSION="$REF"; FORCE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || usage; VERSION="$2"; shift 2 ;;
    --force) FORCE=1; shift ;;
    *) usage ;;
  esac
done

[[ "$VERSION" =~ ^[A-Za-z0-9_.-]+$ && "$VERSION" != "." && "$VERSION" != ".." ]] ||
  die "version \"$VERSION\" is not a task id part ([A-Za-z0-9_.-]); give --version NAME"
[ -d "$GIT_DIR_IN" ] || die "$GIT_DIR_IN: no such folder"
git_() { git -C "$GIT_DIR_IN" "$@"; }
git_ rev-parse --git-dir >/dev/null 2>&1 || die "$GIT_DIR_IN is not a git repository"

# The ref as given, else as a remote-tracking branch of a clone.
COMMIT=""
for cand in "$REF" "origin/$REF" "refs/tags/$REF"; do
  if COMMIT=$(git_ rev-parse --verify --quiet "$cand^{commit}"); then break; fi
  COMMIT=""
done
[ -n "$COMMIT" ] || die "$GIT_DIR_IN has no branch, tag or commit \"$REF\" (git -C $GIT_DIR_IN fetch --all?)"

# Where the levels live at that commit: KernelBench/levelN in the repository.
PREFIX=""
for p in KernelBench/ ""; do
  if git_ cat-file -e "$COMMIT:${p}level1" 2>/dev/null; then PREFIX="$p"; break; fi
done
git_ cat-file -e "$COMMIT:${PREFIX}level1" 2>/dev/null ||
  die "$REF ($COMMIT) has no KernelBench/level1 folder: not a KernelBench commit"

if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
  [ "$FORCE" = 1 ] || die "$OUT is not empty (--force replaces it)"
  rm -rf "$OUT"
fi
mkdir -p "$OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kb-extract-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Levels 1-3 only: level 4 (Hugging Face models) needs downloads to run.
levels=()
for n in 1 2 3; do
  git_ cat-file -e "$COMMIT:${PREFIX}level$n" 2>/dev/null && levels+=("${PREFIX}level$n")
done
git_ archive --format=tar "$COMMIT" "${levels[@]}" | tar -x -C "$TMP"
problems=""
for l in "${levels[@]}"; do
  name=$(basename "$l")
  mv "$TMP/$l" "$OUT/$name"
  count=$(find "$OUT/$name" -maxdepth 1 -name '*.py' ! -name '__init__.py' | wc -l)
  problems="$problems${problems:+, }\"$name\": $count"
done

json_str() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
REPO=$(cd "$GIT_DIR_IN" && pwd)
DATE=$(git_ show -s --format=%cI "$COMMIT")
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cat >"$OUT/kernelbench-version.json" <<EOF
{
  "format": "kb-kernelbench-version",
  "version": $(json_str "$VERSION"),
  "ref": $(json_str "$REF"),
  "commit": "$COMMIT",
  "commit_date": "$DATE",
  "repository": $(json_str "$REPO"),
  "extracted_at": "$NOW",
  "problems": {$problems}
}
EOF
echo "kernelbench-extract: $REF ($COMMIT, $DATE) -> $OUT as version $VERSION: {$problems}" >&2
