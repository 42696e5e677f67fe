#!/usr/bin/env bash
# `kbcheck static` as a user runs it from a second checkout (issue 18): a
# cache filled from one tree gives the same verdicts for a fresh clone of it
# (new path, new mtimes), after a `touch` of its headers, after the first tree
# is gone, and for two trees checked at once by two processes on one cache.
# The PCH is used every time (`pch_fallback` false), never silently dropped.
# Usage: pch_clone_test.sh KBCHECK SOURCE_ROOT
set -uo pipefail
KBCHECK="$1"
ROOT="$2"
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
CACHE="$TMP/cache"
fails=0
OK_SOL="$ROOT/testdata/solutions/vec_gelu"
BAD_SOL="$ROOT/tests/analyze/cases/environment"

# A checkout's include tree: by `git clone` when the source is a git work
# tree whose committed header is the one on disk, else by copying.
clone() {  # clone NAME -> prints the include dir
  local to="$TMP/$1"
  if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
     git -C "$ROOT" diff --quiet HEAD -- include 2>/dev/null &&
     git clone -q --no-checkout "$ROOT" "$to" 2>/dev/null &&
     git -C "$to" checkout -q HEAD -- include 2>/dev/null; then
    :
  else
    rm -rf "$to"; mkdir -p "$to"; cp -r "$ROOT/include" "$to/include"
  fi
  echo "$to/include"
}
# run NAME INCLUDE SOLUTION: kbcheck static with that tree's interface header.
run() {
  KB_INTERFACE_INCLUDE="$2" "$KBCHECK" static "$3" -q --cache-dir "$CACHE" --json "$TMP/$1.json" 2>"$TMP/$1.err"
  echo $? >"$TMP/$1.rc"
}
# expect NAME RC STATUS RULES: the verdict of run NAME, from the PCH.
expect() {
  local rc status rules fallback
  rc=$(cat "$TMP/$1.rc")
  status=$(jq -r '.status' "$TMP/$1.json" 2>/dev/null)
  rules=$(jq -c '[.findings[].rule] | unique' "$TMP/$1.json" 2>/dev/null)
  fallback=$(jq -r '.pch_fallback' "$TMP/$1.json" 2>/dev/null)
  if [ "$rc" = "$2" ] && [ "$status" = "$3" ] && [ "$rules" = "$4" ] && [ "$fallback" = false ] &&
     [ "$(jq -r '.compile_errors | length' "$TMP/$1.json")" = 0 ]; then
    echo "ok: $1 (exit $rc, $status, $rules)"
  else
    echo "FAIL: $1: exit $rc, status $status, rules $rules, pch_fallback $fallback;" \
         "expected exit $2, $3, $4, pch_fallback false"
    head -c 2000 "$TMP/$1.err" | sed 's/^/    /'
    fails=$((fails + 1))
  fi
}
both() {  # both LABEL INCLUDE: the clean and the violating solution
  run "$1-ok" "$2" "$OK_SOL"; expect "$1-ok" 0 ok '[]'
  run "$1-bad" "$2" "$BAD_SOL"; expect "$1-bad" 1 static_violation '["environment","extern-symbol"]'
}

A=$(clone a)
both first "$A"
sleep 1  # mtimes a second later than the first tree's
B=$(clone b)
both clone "$B"
touch "$A"/kb/solution.h "$A"/kb/nvrtc/*
both touched "$A"
rm -rf "$TMP/a"
both first-gone "$B"
[ "$(ls "$CACHE/pch" | wc -l)" = 1 ] && echo "ok: one PCH folder shared" ||
  { echo "FAIL: PCH folders: $(ls "$CACHE/pch")"; fails=$((fails + 1)); }

# Two trees at once, two processes, an empty cache: both build the PCHs.
rm -rf "$CACHE"
C=$(clone c); D=$(clone d)
run par-c "$C" "$OK_SOL" & p1=$!
run par-d "$D" "$BAD_SOL" & p2=$!
wait $p1 $p2
expect par-c 0 ok '[]'
expect par-d 1 static_violation '["environment","extern-symbol"]'
run par-c2 "$C" "$BAD_SOL" & p1=$!
run par-d2 "$D" "$OK_SOL" & p2=$!
wait $p1 $p2
expect par-c2 1 static_violation '["environment","extern-symbol"]'
expect par-d2 0 ok '[]'

if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "all as expected"
