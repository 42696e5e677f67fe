#!/usr/bin/env bash
# Python-format solutions on the CPU (testdata/solutions-python/expected.json):
# for each, `kbcheck TASK PATH --policy P --device cpu` (static -> build ->
# verify) ends with the expected status and its static stage reports exactly
# the expected rule ids, and, where given, `kbcheck verify` without the rules
# ends with the "unruled" status: what the run time does on its own.
# The static findings are read from the full run's static stage (the report
# `kbcheck static --policy P` writes, so the checker runs once per entry, not
# twice); `kbcheck static` itself runs on the first entry with a "where",
# and must report what the full run's static stage reported.
# Usage: python_format_test.sh KBCHECK SOURCE_ROOT [DEVICE]
# DEVICE cuda (the GPU suite): the final status expected is the entry's
# "cuda" where it has one, else its "cpu"; the "unruled" run is the GPU's too
# (where the entry's "unruled_cuda" is given).
set -uo pipefail
KBCHECK="$1"
ROOT="$2"
DEVICE="${3:-cpu}"
EXPECTED="$ROOT/testdata/solutions-python/expected.json"
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
standalone=""
printf '%-22s %-28s %-28s %-18s %s\n' solution "static expected" "static got" "$DEVICE" "unruled"
for name in $(jq -r '.solutions | keys[]' "$EXPECTED"); do
  e=$(jq -c ".solutions[\"$name\"]" "$EXPECTED")
  path="$ROOT/testdata/$(jq -r .path <<<"$e")"
  task="$ROOT/testdata/tasks/$(jq -r .task <<<"$e")"
  policy=$(jq -r .policy <<<"$e")
  want=$(jq -c '.static | sort' <<<"$e")
  if [ "$DEVICE" = cpu ]; then want_cpu=$(jq -r .cpu <<<"$e"); else want_cpu=$(jq -r '.cuda // .cpu' <<<"$e"); fi
  "$KBCHECK" "$task" "$path" --policy "$policy" --device "$DEVICE" -q --json "$TMP/$name.cpu.json" 2>"$TMP/$name.cpu.err"
  cpu=$(jq -r '.status // "none"' "$TMP/$name.cpu.json" 2>/dev/null || echo none)
  jq '.stages.static.report // empty' "$TMP/$name.cpu.json" >"$TMP/$name.static.json" 2>/dev/null
  got=$(jq -c '[.findings[] | select(.severity == "error") | .rule] | unique' "$TMP/$name.static.json" 2>/dev/null || echo '"no report"')
  verdict=""
  [ "$got" = "$want" ] || { verdict="FAIL(static)"; fails=$((fails + 1)); }
  # "where": findings that must be reported at exactly FILE:LINE:COL:RULE
  # (the Clang rules' findings in load_inline strings, mapped to the .py).
  for w in $(jq -r '(.where // [])[]' <<<"$e"); do
    jq -e --arg w "$w" 'any(.findings[]; "\(.file):\(.line):\(.column):\(.rule)" == $w)' \
      "$TMP/$name.static.json" >/dev/null 2>&1 || { verdict="$verdict FAIL(where $w)"; fails=$((fails + 1)); }
  done
  # `kbcheck static --policy P` on its own, once (an entry with a "where"):
  # the same findings, rule and place, as the full run's static stage.
  if [ -z "$standalone" ] && [ "$(jq '.where // [] | length' <<<"$e")" != 0 ]; then
    standalone=$name
    "$KBCHECK" static "$task" "$path" --policy "$policy" -q --json "$TMP/$name.alone.json" 2>"$TMP/$name.alone.err"
    findings='[.findings[] | {rule, severity, file, line, column}] | sort'
    if [ "$(jq -c "$findings" "$TMP/$name.alone.json" 2>/dev/null || echo '"no report"')" != \
         "$(jq -c "$findings" "$TMP/$name.static.json" 2>/dev/null || echo '"no report"')" ]; then
      verdict="$verdict FAIL(kbcheck static differs from the static stage)"; fails=$((fails + 1))
    fi
  fi

  if [ "$cpu" != "$want_cpu" ]; then
    verdict="$verdict FAIL(cpu: $cpu, want $want_cpu: $(jq -r '.message // ""' "$TMP/$name.cpu.json" 2>/dev/null | head -c 300))"
    fails=$((fails + 1))
  fi

  if [ "$DEVICE" = cpu ]; then want_unruled=$(jq -r '.unruled // "null"' <<<"$e"); else want_unruled=$(jq -r '.unruled_cuda // "null"' <<<"$e"); fi
  unruled=skipped
  if [ "$want_unruled" != null ]; then
    "$KBCHECK" verify "$task" "$path" --device "$DEVICE" -q --json "$TMP/$name.verify.json" 2>"$TMP/$name.verify.err"
    unruled=$(jq -r '.status // "none"' "$TMP/$name.verify.json" 2>/dev/null || echo none)
    if [ "$unruled" != "$want_unruled" ]; then
      verdict="$verdict FAIL(unruled: $unruled, want $want_unruled: $(jq -r '.message // ""' "$TMP/$name.verify.json" 2>/dev/null | head -c 300))"
      fails=$((fails + 1))
    fi
  fi
  printf '%-22s %-28s %-28s %-18s %-12s %s\n' "$name" "$want" "$got" "$cpu" "$unruled" "$verdict"
done
[ -n "$standalone" ] || { echo "FAIL: no entry has a \"where\": kbcheck static did not run on its own"; fails=$((fails + 1)); }
echo "$fails failure(s)"
[ "$fails" = 0 ]
