#!/usr/bin/env bash
# The CPU half of the adversarial suite (testdata/solutions-adversarial/
# expected.json): for every solution, `kbcheck static` reports exactly the
# expected rule ids (none for the legitimate fast solutions), and
# `kbcheck build` compiles it, so that on the GPU each one can only fail for
# run-time reasons. The run-time half is tests/gpu/adversarial_gpu_test.sh.
# Usage: adversarial_static_test.sh KBCHECK SOURCE_ROOT
set -uo pipefail
KBCHECK="$1"
ROOT="$2"
EXPECTED="$ROOT/testdata/solutions-adversarial/expected.json"
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
have_nvcc=1
printf '%-24s %-34s %-34s %s\n' solution "static expected" "static got" build
for name in $(jq -r '.solutions | keys[]' "$EXPECTED"); do
  e=$(jq -c ".solutions[\"$name\"]" "$EXPECTED")
  dir="$ROOT/testdata/$(jq -r .dir <<<"$e")"
  want=$(jq -c '.static // [] | sort' <<<"$e")
  "$KBCHECK" static "$ROOT/testdata/tasks/$(jq -r .task <<<"$e")" "$dir" -q \
    --json "$TMP/$name.static.json" 2>"$TMP/$name.static.err"
  rc=$?
  got=$(jq -c '[.findings[].rule] | unique' "$TMP/$name.static.json" 2>/dev/null || echo '"no report"')
  status=$(jq -r '.status // "none"' "$TMP/$name.static.json" 2>/dev/null || echo none)
  want_status=$([ "$want" = "[]" ] && echo ok || echo static_violation)
  verdict=""
  if [ "$got" != "$want" ] || [ "$status" != "$want_status" ]; then
    verdict="FAIL(static: $status, exit $rc)"
    fails=$((fails + 1))
  fi
  build="skipped"
  if [ $have_nvcc = 1 ]; then
    "$KBCHECK" build "$dir" -q --json "$TMP/$name.build.json" 2>"$TMP/$name.build.err"
    build=$(jq -r '.status // "none"' "$TMP/$name.build.json" 2>/dev/null || echo none)
    if [ "$build" = "infra_error" ]; then
      echo "  (kbcheck build: infra_error, no CUDA toolkit? build checks skipped: $(jq -r '.message' "$TMP/$name.build.json" | head -c 200))"
      have_nvcc=0; build="skipped"
    elif [ "$build" != "ok" ]; then
      verdict="$verdict FAIL(build)"
      fails=$((fails + 1))
    fi
  fi
  printf '%-24s %-34s %-34s %s %s\n' "$name" "$want" "$got" "$build" "$verdict"
  if [ -n "$verdict" ]; then
    sed 's/^/    /' "$TMP/$name.static.err" | head -20
    [ -f "$TMP/$name.build.json" ] && jq -r '.message // ""' "$TMP/$name.build.json" | head -c 2000 | sed 's/^/    /'
  fi
done
if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "all as expected"
