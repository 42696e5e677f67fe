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
# A kbcheck built without the Clang checker (-Dclang=disabled, as on the GPU
# machine) runs no static stage: its full run's report has a static stage
# marked skipped although the build ran. Then, told once, the static
# expectations (rule ids, "where", `kbcheck static`) are skipped, the full
# run is the run-time-only run, and its status must be the entry's
# run-time-only one on DEVICE ("unruled_cuda" on cuda, "unruled" on cpu;
# none given: not checked); no separate `kbcheck verify` runs.
# An "unruled"/"unruled_cuda" that is a list accepts any of its statuses (a race).
# PYTHON_FORMAT_ONLY="NAME NAME ...": only those entries (a GPU call's bound
# does not fit all of them); the standalone `kbcheck static` check then runs
# only if one of them has a "where".
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
checker=""  # yes: the static stage ran; no: this kbcheck has no checker; "": not known yet
# matches WANT GOT: WANT (JSON: a status, or a list of statuses) accepts GOT.
matches() { jq -en --argjson w "$1" --arg g "$2" 'if ($w | type) == "array" then ($w | index($g)) != null else $w == $g end' >/dev/null; }
shown() { jq -r 'if type == "array" then join("|") else . end' <<<"$1"; }
printf '%-22s %-28s %-28s %-18s %s\n' solution "static expected" "static got" "$DEVICE" "unruled"
only=" ${PYTHON_FORMAT_ONLY:-} "
for name in $(jq -r '.solutions | keys[]' "$EXPECTED"); do
  [ -z "${PYTHON_FORMAT_ONLY:-}" ] || [[ "$only" == *" $name "* ]] || continue
  e=$(jq -c ".solutions[\"$name\"]" "$EXPECTED")
  path="$ROOT/testdata/$(jq -r .path <<<"$e")"
  task="$ROOT/testdata/tasks/$(jq -r .task <<<"$e")"
  policy=$(jq -r .policy <<<"$e")
  want=$(jq -c '.static | sort' <<<"$e")
  if [ "$DEVICE" = cpu ]; then want_cpu=$(jq -c .cpu <<<"$e"); else want_cpu=$(jq -c '.cuda // .cpu' <<<"$e"); fi
  if [ "$DEVICE" = cpu ]; then want_unruled=$(jq -c '.unruled // null' <<<"$e"); else want_unruled=$(jq -c '.unruled_cuda // null' <<<"$e"); fi
  "$KBCHECK" "$task" "$path" --policy "$policy" --device "$DEVICE" -q --json "$TMP/$name.cpu.json" 2>"$TMP/$name.cpu.err"
  cpu=$(jq -r '.status // "none"' "$TMP/$name.cpu.json" 2>/dev/null || echo none)
  if [ -z "$checker" ]; then
    if jq -e '.stages.static.skipped == false' "$TMP/$name.cpu.json" >/dev/null 2>&1; then
      checker=yes
    elif jq -e '.stages.static.skipped == true and .stages.build.skipped == false' "$TMP/$name.cpu.json" >/dev/null 2>&1; then
      checker=no
      echo "static checker not built: static expectations skipped"
    fi
  fi
  verdict=""
  unruled=skipped
  if [ "$checker" = no ]; then
    # The full run is the run-time-only run: no static findings to compare,
    # no `kbcheck verify` of its own.
    got="not built"
    jq -e '.stages.static.skipped == true' "$TMP/$name.cpu.json" >/dev/null 2>&1 ||
      { verdict="FAIL(a static stage ran, or no report)"; fails=$((fails + 1)); }
    want_cpu=$want_unruled
    unruled="-"
    if [ "$want_cpu" = null ]; then
      verdict="$verdict (run-time-only status not predicted: not checked)"
    elif ! matches "$want_cpu" "$cpu"; then
      verdict="$verdict FAIL($DEVICE: $cpu, want $(shown "$want_cpu") run-time only: $(jq -r '.message // ""' "$TMP/$name.cpu.json" 2>/dev/null | head -c 300))"
      fails=$((fails + 1))
    fi
    printf '%-22s %-28s %-28s %-18s %-12s %s\n' "$name" "$want" "$got" "$cpu" "$unruled" "$verdict"
    continue
  fi
  jq '.stages.static.report // empty' "$TMP/$name.cpu.json" >"$TMP/$name.static.json" 2>/dev/null
  got=$(jq -c '[.findings[] | select(.severity == "error") | .rule] | unique' "$TMP/$name.static.json" 2>/dev/null || echo '"no report"')
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

  if ! matches "$want_cpu" "$cpu"; then
    verdict="$verdict FAIL($DEVICE: $cpu, want $(shown "$want_cpu"): $(jq -r '.message // ""' "$TMP/$name.cpu.json" 2>/dev/null | head -c 300))"
    fails=$((fails + 1))
  fi

  if [ "$want_unruled" != null ]; then
    "$KBCHECK" verify "$task" "$path" --device "$DEVICE" -q --json "$TMP/$name.verify.json" 2>"$TMP/$name.verify.err"
    unruled=$(jq -r '.status // "none"' "$TMP/$name.verify.json" 2>/dev/null || echo none)
    if ! matches "$want_unruled" "$unruled"; then
      verdict="$verdict FAIL(unruled: $unruled, want $(shown "$want_unruled"): $(jq -r '.message // ""' "$TMP/$name.verify.json" 2>/dev/null | head -c 300))"
      fails=$((fails + 1))
    fi
  fi
  printf '%-22s %-28s %-28s %-18s %-12s %s\n' "$name" "$want" "$got" "$cpu" "$unruled" "$verdict"
done
[ -n "$standalone" ] || [ "$checker" = no ] || [ -n "${PYTHON_FORMAT_ONLY:-}" ] ||
  { echo "FAIL: no entry has a \"where\": kbcheck static did not run on its own"; fails=$((fails + 1)); }
echo "$fails failure(s)"
[ "$fails" = 0 ]
