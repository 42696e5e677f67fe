#!/usr/bin/env bash
# The command-line contract of docs/cli.md, enforced on all eight tools: no
# arguments, --version ("TOOL VERSION"), --help (every flag described, the
# usage line naming the tool), an unknown flag, enumerated flags with bad
# values, a missing and an unreadable input, an unwritable output, one stream
# on stdout, --json FILE, output formats by extension, durations with units,
# and SIGINT during work. Each case
# checks the documented exit code and, for every error, exactly one line
# "TOOL: what" on stderr (no traceback).
#
# Usage: cli_conformance_test.sh SOURCE_ROOT WORKDIR KBCHECK KBPROF KBSYNTH KBREWARD KBROLLOUT KBPOLICY KBTRAIN KBSERVE
# A tool given as "none" was not built: its cases fail (the contract is for
# all eight).
set -uo pipefail
ROOT="$1"; WORK="$2"; shift 2
declare -A EXE=([kbcheck]="$1" [kbprof]="$2" [kbsynth]="$3" [kbreward]="$4" [kbrollout]="$5" [kbpolicy]="$6" [kbtrain]="$7" [kbserve]="${8:-none}")
TOOLS=(kbcheck kbprof kbsynth kbreward kbrollout kbpolicy kbtrain kbserve)
T="$ROOT/testdata"
rm -rf "$WORK"; mkdir -p "$WORK/tmp" "$WORK/home"
chmod 1777 "$WORK" "$WORK/tmp" "$WORK/home"
export TMPDIR="$WORK/tmp"
export KB_CACHE_DIR="${KB_CACHE_DIR:-$WORK/cache}"
pass=0; fail=0; FAILED=()
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; [ -n "${2:-}" ] && sed 's/^/    /' <<<"$2" | head -20; fail=$((fail + 1)); FAILED+=("$1"); }

# As an unprivileged user when this runs as root (so that chmod 000 means
# something), else as ourselves.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  AS_USER=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$WORK/home")
else
  AS_USER=(env)
fi

# expect NAME TOOL WANT_RC [MESSAGE_REGEX] -- CMD...: exit code WANT_RC; for
# WANT_RC 2 (refused before any work) exactly one stderr line "TOOL: ...";
# for 1 and 3 (after work, which may print progress) the last stderr line is
# "TOOL: ..."; MESSAGE_REGEX, when given, matches that line. No traceback.
n=0
expect() {
  local name="$1" tool="$2" want="$3" re=""; shift 3
  if [ "$1" != "--" ]; then re="$1"; shift; fi
  shift
  n=$((n + 1))
  local out="$WORK/case$n.out" err="$WORK/case$n.err"
  if [ "${EXE[$tool]}" = none ]; then bad "$tool: $name ($tool was not built)"; return; fi
  local cmd=("$@")
  [ -n "${EXE[${cmd[0]}]+set}" ] && cmd[0]="${EXE[${cmd[0]}]}"  # a tool's name: its executable
  timeout 300 "${cmd[@]}" >"$out" 2>"$err" </dev/null
  local rc=$?
  last_rc=$rc
  if [ "$rc" != "$want" ]; then bad "$tool: $name: exit $rc, want $want" "$(cat "$err")"; return; fi
  if [ "$want" != 0 ]; then
    local lines; lines=$(grep -c '' "$err")
    if [ "$want" = 2 ] && [ "$lines" != 1 ]; then bad "$tool: $name: $lines lines on stderr, want 1" "$(cat "$err")"; return; fi
    if grep -q "Traceback" "$err"; then bad "$tool: $name: a traceback on stderr" "$(cat "$err")"; return; fi
    local last; last=$(grep -v '^$' "$err" | tail -1)
    if ! grep -q "^$tool: " <<<"$last"; then bad "$tool: $name: the message does not start with \"$tool: \"" "$(cat "$err")"; return; fi
    if [ -n "$re" ] && ! grep -Eq -- "$re" <<<"$last"; then bad "$tool: $name: the message does not match /$re/" "$(cat "$err")"; return; fi
  fi
  ok "$tool: $name (exit $rc)"
}
# The tools by name, outside expect too.
kbcheck() { "${EXE[kbcheck]}" "$@"; }
kbsynth() { "${EXE[kbsynth]}" "$@"; }
kbreward() { "${EXE[kbreward]}" "$@"; }

# Inputs.
TASK="$T/tasks/linear_relu"; SOL="$T/solutions-cpu/ok_linear_relu"
TINY="$T/policy/qwen2-tiny"
mkdir -p "$WORK/in"
cp -r "$TASK" "$WORK/in/task"; cp -r "$SOL" "$WORK/in/sol"
mkdir -p "$WORK/in/locked"; cp -r "$SOL" "$WORK/in/locked/sol"; cp -r "$TASK" "$WORK/in/locked/task"
printf '{"tool": "kbcheck"}\n' >"$WORK/in/locked/report.jsonl"
cp "$T/tasks-src/kernelbench/level1/1_ReLU_Scale.py" "$WORK/in/locked/model.py"
chmod -R a+rX "$WORK/in"; chmod 000 "$WORK/in/locked"
UNREAD="$WORK/in/locked"          # a folder nobody but root may enter
mkdir -p "$WORK/ro"; chmod 555 "$WORK/ro"
NOWRITE_FILE="/dev/null/out.json"  # a parent that is not a folder: fails for root too
NOWRITE_DIR="/dev/null/out"
mkdir -p "$WORK/tr"
if [ "${EXE[kbtrain]}" != none ]; then
  "${EXE[kbtrain]}" toy demos --first-seed 0 --last-seed 3 --out "$WORK/tr/demos.jsonl" >/dev/null 2>&1 ||
    echo "note: kbtrain toy demos failed; the kbtrain cases that need trajectories will fail"
fi
chmod -R a+rwX "$WORK/tr"

UNKNOWN='unknown flag --frobnicate \(see [a-z]+ --help\)$'

# ---- every tool: no arguments, --version, --help, unknown flag -----------------
declare -A VERSION_CASE
# The --help texts (TOOL [SUB...] --help 2>&1 and its exit code), each run
# once: the --help case below, help_check and subcommands share them.
declare -A HELP_TEXT HELP_RC
for tool in "${TOOLS[@]}"; do
  expect "no arguments" "$tool" 2 -- "$tool"
  expect "--version" "$tool" 0 -- "$tool" --version
  VERSION_CASE[$tool]=$n  # its stdout and stderr are read again below
  if [ "${EXE[$tool]}" != none ]; then
    v=$(cat "$WORK/case$n.out")  # what the case above printed on stdout
    if grep -Eq "[0-9]+\.[0-9]+" <<<"$v"; then ok "$tool: --version prints a version ($v)"; else bad "$tool: --version prints a version" "$v"; fi
  fi
  expect "--help" "$tool" 0 -- "$tool" --help
  if [ "${EXE[$tool]}" != none ]; then
    HELP_TEXT[$tool]=$(cat "$WORK/case$n.out" "$WORK/case$n.err"); HELP_RC[$tool]=$last_rc
  fi
  expect "unknown flag" "$tool" 2 "^$tool: $UNKNOWN" -- "$tool" --frobnicate
done

# --help of every subcommand (one level down, two for kbtrain toy), and every
# flag in each described: CLI11 puts the description at column 30, or, when
# the flag's column (name, type, default) fills 30 characters, on the next
# line, indented by 30.
help_text() {  # help_text TOOL [SUB...]: sets $text and $rc to `TOOL SUB... --help 2>&1`'s
  local key="$*"
  if [ -z "${HELP_RC[$key]+set}" ]; then
    HELP_TEXT[$key]=$("${EXE[$1]}" "${@:2}" --help 2>&1)
    HELP_RC[$key]=$?
  fi
  text=${HELP_TEXT[$key]}; rc=${HELP_RC[$key]}
}
help_check() {
  local tool="$1"; shift
  local text rc; help_text "$tool" "$@"
  if [ $rc != 0 ]; then bad "$tool $* --help: exit $rc"; return; fi
  local undescribed
  undescribed=$(python3 -c '
import sys
lines = sys.stdin.read().split("\n")
for i, l in enumerate(lines):
    if not l.startswith("  -"):
        continue
    name = l.rstrip()
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    if nxt.startswith(" " * 30) and nxt.strip():
        continue  # a long flag column: the description is on the next line
    if len(name) <= 30 or not l[30:].strip():
        print(name.strip())
' <<<"$text")
  if [ -z "$undescribed" ]; then ok "$tool $* --help: every flag described"
  else bad "$tool $* --help: flags without a description" "$undescribed"; fi
}
subcommands() {  # the names listed under "Subcommands:"
  local text rc; help_text "$@"
  printf '%s\n' "$text" | awk '/^Subcommands:/{s=1; next} /^[^ ]/{s=0} s && /^  [a-z]/{print $1}'
}
for tool in "${TOOLS[@]}"; do
  [ "${EXE[$tool]}" = none ] && continue
  help_check "$tool"
  for sub in $(subcommands "$tool"); do
    help_check "$tool" "$sub"
    for sub2 in $(subcommands "$tool" "$sub"); do help_check "$tool" "$sub" "$sub2"; done
  done
done

# A misspelt flag is named as unknown even where a required flag is missing.
expect "subcommand + unknown flag" kbcheck 2 "^kbcheck: $UNKNOWN" -- kbcheck verify --frobnicate
expect "subcommand + unknown flag" kbsynth 2 "^kbsynth: $UNKNOWN" -- kbsynth import --frobnicate
expect "subcommand + unknown flag" kbreward 2 "^kbreward: $UNKNOWN" -- kbreward report --frobnicate
expect "subcommand + unknown flag" kbrollout 2 "^kbrollout: $UNKNOWN" -- kbrollout run --frobnicate
expect "subcommand + unknown flag" kbpolicy 2 "^kbpolicy: $UNKNOWN" -- kbpolicy decode --frobnicate
expect "subcommand + unknown flag (required flags missing)" kbtrain 2 "^kbtrain: $UNKNOWN" -- kbtrain rft --frobnicate

# ---- kbcheck --------------------------------------------------------------------
expect "verify --device bogus" kbcheck 2 "device" -- kbcheck verify --device bogus "$TASK" "$SOL"
expect "build --device bogus" kbcheck 2 "device" -- kbcheck build --device bogus "$SOL"
expect "verify --precision bogus" kbcheck 2 "precision" -- kbcheck verify --device cpu --precision bogus "$TASK" "$SOL"
expect "build --arch bogus" kbcheck 2 "arch" -- kbcheck build --device cpu --arch bogus "$SOL"
expect "static --arch bogus" kbcheck 2 "arch" -- kbcheck static --arch bogus "$SOL"
expect "--seeds 1,x" kbcheck 2 "seeds" -- kbcheck verify --device cpu --seeds 1,x "$TASK" "$SOL"
expect "--seeds 1 2 (space-separated: not the contract)" kbcheck 2 -- kbcheck verify --device cpu --seeds 1 2 "$TASK" "$SOL"
expect "-j -1" kbcheck 2 "jobs" -- kbcheck build --device cpu -j -1 "$SOL"
expect "--timeout -5" kbcheck 2 "timeout" -- kbcheck verify --device cpu --timeout -5 "$TASK" "$SOL"
expect "missing solution" kbcheck 2 -- kbcheck static "$WORK/nonexistent"
expect "missing task" kbcheck 2 -- kbcheck verify --device cpu "$WORK/nonexistent" "$SOL"
expect "unreadable solution" kbcheck 2 -- "${AS_USER[@]}" "${EXE[kbcheck]}" static "$UNREAD/sol"
expect "unreadable task" kbcheck 2 -- "${AS_USER[@]}" "${EXE[kbcheck]}" verify --device cpu "$UNREAD/task" "$SOL"
expect "static: unwritable --json" kbcheck 2 "json" -- kbcheck static "$SOL" --json "$NOWRITE_FILE"
expect "static: --json in a read-only folder" kbcheck 2 "json" -- \
  "${AS_USER[@]}" "${EXE[kbcheck]}" static "$SOL" --json "$WORK/ro/r.json"
expect "verify: unwritable --json, found before the work" kbcheck 2 "json" -- \
  kbcheck verify --device cpu "$TASK" "$SOL" --json "$NOWRITE_FILE"
expect "build: --json is a folder" kbcheck 2 "json" -- kbcheck build --device cpu "$SOL" --json "$WORK"
expect "--json - --sarif - (two streams on stdout)" kbcheck 2 "stdout" -- kbcheck static "$SOL" --json - --sarif -
# JSON on stdout is one compact object per line: a loop of runs is JSONL.
for s in ok_linear_relu ok_with_init; do
  kbcheck build --device cpu "$T/solutions-cpu/$s" --json - 2>/dev/null
done >"$WORK/kbcheck-loop.jsonl"
if [ "$(grep -c '' "$WORK/kbcheck-loop.jsonl")" = 2 ] && jq -e -s 'length == 2 and all(.[]; .tool == "kbcheck")' "$WORK/kbcheck-loop.jsonl" >/dev/null
then ok "kbcheck: two runs of --json - are two JSON lines"
else bad "kbcheck: two runs of --json - are two JSON lines" "$(head -c 600 "$WORK/kbcheck-loop.jsonl")"; fi
if [ "${EXE[kbreward]}" != none ]; then
  if kbreward report - <"$WORK/kbcheck-loop.jsonl" >/dev/null 2>"$WORK/kbreward-loop.err" || ! grep -q "not JSON" "$WORK/kbreward-loop.err"
  then ok "kbcheck: --json - lines are read by kbreward report - (no \"not JSON\")"
  else bad "kbcheck: --json - lines are read by kbreward report -" "$(cat "$WORK/kbreward-loop.err")"; fi
fi
kbcheck static "$SOL" --json - >"$WORK/static.jsonl" 2>/dev/null
if [ "$(grep -c '' "$WORK/static.jsonl")" = 1 ] && jq -e . "$WORK/static.jsonl" >/dev/null
then ok "kbcheck static --json -: one line"; else bad "kbcheck static --json -: one line" "$(head -5 "$WORK/static.jsonl")"; fi

# ---- kbprof ---------------------------------------------------------------------
expect "--device bogus" kbprof 2 "device" -- kbprof "$TASK" "$SOL" --device bogus
expect "--precision bogus" kbprof 2 "precision" -- kbprof "$TASK" "$SOL" --device cpu --precision bogus
expect "--target-ci 5" kbprof 2 "target-ci" -- kbprof "$TASK" "$SOL" --device cpu --target-ci 5
expect "--null-calls 0" kbprof 2 "null-calls" -- kbprof "$TASK" "$SOL" --device cpu --null-calls 0
expect "--arch bogus" kbprof 2 "arch" -- kbprof "$TASK" "$SOL" --device cpu --arch bogus
expect "missing task" kbprof 2 -- kbprof "$WORK/nonexistent" "$SOL" --device cpu
expect "unreadable task" kbprof 2 -- "${AS_USER[@]}" "${EXE[kbprof]}" "$UNREAD/task" "$SOL" --device cpu
expect "unwritable --json" kbprof 2 "json" -- kbprof "$TASK" "$SOL" --device cpu --json "$NOWRITE_FILE"

# ---- kbsynth --------------------------------------------------------------------
PY1="$T/tasks-src/kernelbench/level1/1_ReLU_Scale.py"
expect "import --compiled bogus" kbsynth 2 "compiled" -- kbsynth import "$PY1" -o "$WORK/imp-bad" --compiled bogus
expect "import --weights bogus" kbsynth 2 "weights" -- kbsynth import "$PY1" -o "$WORK/imp-bad" --weights bogus
expect "baseline --device bogus" kbsynth 2 "device" -- kbsynth baseline "$TASK" --device bogus
expect "check --device bogus" kbsynth 2 "device" -- kbsynth check "$TASK" --device bogus
expect "check --seeds a,b" kbsynth 2 "seeds" -- kbsynth check "$TASK" --seeds a,b
expect "compose --composer bogus" kbsynth 2 "composer" -- kbsynth compose -n 1 -o "$WORK/c-bad" --composer bogus
expect "compose --profile bogus" kbsynth 2 "profile" -- kbsynth compose -n 1 -o "$WORK/c-bad" --profile bogus
expect "compose --mix 9:1" kbsynth 2 "mix" -- kbsynth compose -n 1 -o "$WORK/c-bad" --mix 9:1
[ "${EXE[kbsynth]}" != none ] && kbsynth compose -n 1 --profile tiny -o "$WORK/c-ok" >/dev/null 2>&1
expect "filter --device bogus" kbsynth 2 "device" -- kbsynth filter "$WORK/c-ok" --device bogus
expect "filter --max-similarity 2" kbsynth 2 "similarity" -- kbsynth filter "$WORK/c-ok" --max-similarity 2
expect "filter --stages bogus" kbsynth 2 "stage" -- kbsynth filter "$WORK/c-ok" --stages parse,bogus
expect "missing import source" kbsynth 2 -- kbsynth import "$WORK/nonexistent.py" -o "$WORK/imp-missing"
expect "missing bundle (info)" kbsynth 2 -- kbsynth info "$WORK/nonexistent"
expect "missing run folder (filter)" kbsynth 2 -- kbsynth filter "$WORK/nonexistent"
expect "unreadable import source" kbsynth 2 -- \
  "${AS_USER[@]}" "${EXE[kbsynth]}" import "$UNREAD/model.py" -o "$WORK/tmp/imp-unread"
expect "unreadable bundle (info)" kbsynth 2 -- "${AS_USER[@]}" "${EXE[kbsynth]}" info "$UNREAD/task"
expect "import: unwritable -o" kbsynth 2 "out" -- kbsynth import "$PY1" -o "$NOWRITE_DIR"
expect "import: -o in a read-only folder" kbsynth 2 "out" -- \
  "${AS_USER[@]}" "${EXE[kbsynth]}" import "$PY1" -o "$WORK/ro/tasks"
expect "import: unwritable --report" kbsynth 2 "report" -- kbsynth import "$PY1" -o "$WORK/imp-r" --report "$NOWRITE_FILE"
expect "compose: unwritable -o" kbsynth 2 "out" -- kbsynth compose -n 1 --profile tiny -o "$NOWRITE_DIR"
[ -e "$WORK/imp-r" ] && bad "kbsynth: an import refused for its --report left $WORK/imp-r behind" || ok "kbsynth: a refused import made nothing"
# Importing 0 of 1 tasks is a failure (exit 1), with the report written.
expect "import of a broken program: 0 of 1 imported" kbsynth 1 -- \
  kbsynth import "$T/tasks-src/bad/3_Init_Raises.py" -o "$WORK/imp-none"
if [ -f "$WORK/imp-none/import-report.json" ] && [ "$(jq .summary.ok "$WORK/imp-none/import-report.json")" = 0 ]
then ok "kbsynth: the failed import wrote its report"; else bad "kbsynth: the failed import wrote its report"; fi
# A second writer on the same run folder is refused (exit 2).
kbsynth compose -n 3 --seed 1 --profile tiny -o "$WORK/run-lock" >/dev/null 2>&1
( flock -x 9; sleep 4 ) 9<"$WORK/run-lock" &
lockpid=$!
sleep 0.5
expect "a second writer on a locked run folder" kbsynth 2 "in use" -- kbsynth compose -n 4 --seed 1 --profile tiny -o "$WORK/run-lock"
wait $lockpid
# stdout JSON is one object per line.
if [ "${EXE[kbsynth]}" != none ]; then
  kbsynth stats "$WORK/run-lock" --json >"$WORK/stats.json" 2>/dev/null
  if [ "$(grep -c '' "$WORK/stats.json")" = 1 ] && jq -e . "$WORK/stats.json" >/dev/null
  then ok "kbsynth stats --json: one line"; else bad "kbsynth stats --json: one line" "$(head -3 "$WORK/stats.json")"; fi
  kbsynth seeds >"$WORK/seeds.json" 2>/dev/null
  if [ "$(grep -c '' "$WORK/seeds.json")" = 1 ] && jq -e . "$WORK/seeds.json" >/dev/null
  then ok "kbsynth seeds: one line"; else bad "kbsynth seeds: one line" "$(head -3 "$WORK/seeds.json")"; fi
fi

# ---- kbreward -------------------------------------------------------------------
C="$T/reward/candidates.jsonl"
expect "report --format bogus" kbreward 2 "format" -- kbreward report "$C" --format bogus
expect "report --baseline bogus" kbreward 2 "baseline" -- kbreward report "$C" --baseline bogus
expect "score --scheme bogus" kbreward 2 "scheme" -- kbreward score "$C" --scheme bogus
expect "score --scheme log_speedup (the spelling is log-speedup)" kbreward 2 "scheme" -- kbreward score "$C" --scheme log_speedup
expect "score --stat bogus" kbreward 2 "stat" -- kbreward score "$C" --stat bogus
expect "missing input" kbreward 2 -- kbreward report "$WORK/nonexistent.jsonl"
expect "unreadable input" kbreward 2 -- "${AS_USER[@]}" "${EXE[kbreward]}" report "$UNREAD/report.jsonl"
expect "unwritable -o" kbreward 2 -- kbreward report "$C" -o "$NOWRITE_FILE"

# ---- kbrollout ------------------------------------------------------------------
RT="$T/agent/tasks"
expect "run --device bogus (where the task runs)" kbrollout 2 "device" -- \
  kbrollout run --tasks "$RT" --out "$WORK/r.jsonl" --policy http://127.0.0.1:9/v1 --model m --device bogus
expect "run --scheme bogus" kbrollout 2 "scheme" -- \
  kbrollout run --tasks "$RT" --out "$WORK/r.jsonl" --policy http://127.0.0.1:9/v1 --model m --scheme bogus
expect "run --scheme log_speedup (the spelling is log-speedup)" kbrollout 2 "scheme" -- \
  kbrollout run --tasks "$RT" --out "$WORK/r.jsonl" --policy http://127.0.0.1:9/v1 --model m --scheme log_speedup
expect "run --policy-device bogus" kbrollout 2 "device" -- \
  kbrollout run --tasks "$RT" --out "$WORK/r.jsonl" --local-model "$TINY" --policy-device bogus
expect "run -j 0" kbrollout 2 "jobs" -- \
  kbrollout run --tasks "$RT" --out "$WORK/r.jsonl" --policy http://127.0.0.1:9/v1 --model m -j 0
expect "missing --tasks" kbrollout 2 -- \
  kbrollout run --tasks "$WORK/nonexistent" --out "$WORK/r.jsonl" --policy http://127.0.0.1:9/v1 --model m
expect "unreadable --tasks" kbrollout 2 -- "${AS_USER[@]}" "${EXE[kbrollout]}" run --tasks "$UNREAD/task" \
  --out "$WORK/tmp/r.jsonl" --policy http://127.0.0.1:9/v1 --model m
expect "unwritable --out" kbrollout 2 -- \
  kbrollout run --tasks "$RT" --out "$NOWRITE_FILE" --policy http://127.0.0.1:9/v1 --model m
expect "no policy server: infrastructure (exit 3), no rollout recorded" kbrollout 3 -- \
  kbrollout run --tasks "$RT" --out "$WORK/r-noserver.jsonl" --policy http://127.0.0.1:9/v1 --model m --retries 1
if [ ! -s "$WORK/r-noserver.jsonl" ] || ! jq -e -s 'any(.[]; .reward.value != null)' "$WORK/r-noserver.jsonl" >/dev/null
then ok "kbrollout: no reward recorded without a policy server"
else bad "kbrollout: no reward recorded without a policy server" "$(head -c 400 "$WORK/r-noserver.jsonl")"; fi

# ---- kbpolicy -------------------------------------------------------------------
expect "generate --device bogus" kbpolicy 2 "device" -- kbpolicy generate --model "$TINY" --prompts "$WORK/p.json" --device bogus
expect "generate --dtype bogus" kbpolicy 2 "dtype" -- kbpolicy generate --model "$TINY" --prompts "$WORK/p.json" --dtype bogus
echo '[[1, 2, 3]]' >"$WORK/p.json"
expect "generate --max-new-tokens -1" kbpolicy 2 "max-new-tokens" -- kbpolicy generate --model "$TINY" --prompts "$WORK/p.json" --max-new-tokens -1
expect "decode --ids '[1, 2' (a typo)" kbpolicy 2 -- kbpolicy decode --tokenizer "$TINY" --ids '[1, 2'
expect "decode --ids '[999999]' (out of the vocabulary)" kbpolicy 2 -- kbpolicy decode --tokenizer "$TINY" --ids '[999999]'
expect "decode --ids '[-5]'" kbpolicy 2 -- kbpolicy decode --tokenizer "$TINY" --ids '[-5]'
expect "missing tokenizer" kbpolicy 2 -- kbpolicy decode --tokenizer "$WORK/nonexistent" --ids '[1]'
expect "unreadable tokenizer" kbpolicy 2 -- "${AS_USER[@]}" "${EXE[kbpolicy]}" decode --tokenizer "$UNREAD/tok.json" --ids '[1]'
expect "encode: unwritable --out" kbpolicy 2 -- kbpolicy encode --tokenizer "$TINY" --text hi --out "$NOWRITE_FILE"
expect "save: unwritable --out" kbpolicy 2 -- kbpolicy save --model "$TINY" --out "$NOWRITE_DIR"

# ---- kbtrain --------------------------------------------------------------------
D="$WORK/tr/demos.jsonl"
expect "rft --device bogus" kbtrain 2 "device" -- kbtrain rft "$D" --model "$TINY" --out "$WORK/tr/o1" --device bogus
expect "rft --dtype bogus" kbtrain 2 "dtype" -- kbtrain rft "$D" --model "$TINY" --out "$WORK/tr/o1" --dtype bogus
expect "rft --backend bogus" kbtrain 2 "backend" -- kbtrain rft "$D" --model "$TINY" --out "$WORK/tr/o1" --backend bogus
expect "toy rollout --env bogus" kbtrain 2 "env" -- kbtrain toy rollout --model "$TINY" --out "$WORK/tr/t.jsonl" --env bogus
expect "missing trajectories" kbtrain 2 -- kbtrain rft "$WORK/nonexistent.jsonl" --model "$TINY" --out "$WORK/tr/o2"
expect "unreadable trajectories" kbtrain 2 -- "${AS_USER[@]}" "${EXE[kbtrain]}" rft "$UNREAD/report.jsonl" \
  --model "$TINY" --out "$WORK/tr/o3"
expect "rft: unwritable --out" kbtrain 2 -- kbtrain rft "$D" --model "$TINY" --out "$NOWRITE_DIR"
expect "plot: unwritable --out" kbtrain 2 -- kbtrain plot "$D" --out "$NOWRITE_FILE"

# ---- SIGINT during work -----------------------------------------------------------
# As Ctrl-C does: the tool runs in its own process group with SIGINT at its
# default disposition (a background job of a script would ignore it), and the
# whole group gets it. Want: exit 130, the last stderr line "TOOL: ..." naming
# the interruption, no traceback, no temporaries left in $TMPDIR.
# sigint NAME TOOL WAIT_REGEX WAIT_FILE(stdout|stderr) MAX_WAIT -- CMD...
sigint() {
  local name="$1" tool="$2" waitre="$3" where="$4" maxwait="$5"; shift 6
  n=$((n + 1))
  local out="$WORK/case$n.out" err="$WORK/case$n.err"
  if [ "${EXE[$tool]}" = none ]; then bad "$tool: SIGINT: $name ($tool was not built)"; return; fi
  rm -rf "$TMPDIR"; mkdir -p "$TMPDIR"; chmod 1777 "$TMPDIR"
  setsid env --default-signal=INT,TERM "$@" >"$out" 2>"$err" </dev/null &
  local pid=$! waited=0 f="$err"
  [ "$where" = stdout ] && f="$out"
  while ! grep -Eq -- "$waitre" "$f" 2>/dev/null; do
    sleep 0.2; waited=$((waited + 1))
    if ! kill -0 $pid 2>/dev/null || [ $waited -gt $((maxwait * 5)) ]; then break; fi
  done
  if ! kill -0 $pid 2>/dev/null; then
    wait $pid; bad "$tool: SIGINT: $name: the work ended (exit $?) before the signal" "$(tail -5 "$err")"; return
  fi
  sleep "${SIGINT_DELAY:-0.5}"
  if [ "${SIGINT_TARGET:-group}" = pid ]; then kill -INT $pid 2>/dev/null  # the tool alone: it passes it on
  else kill -INT -- -$pid 2>/dev/null; fi
  local t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt 600 ]; do sleep 0.1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then kill -KILL -- -$pid 2>/dev/null; wait $pid; bad "$tool: SIGINT: $name: still running 60 s after SIGINT" "$(tail -5 "$err")"; return; fi
  wait $pid; local rc=$?
  local last; last=$(grep -v '^$' "$err" | tail -1)
  if [ $rc != 130 ]; then bad "$tool: SIGINT: $name: exit $rc, want 130" "$(tail -5 "$err")"; return; fi
  if grep -q "Traceback" "$err"; then bad "$tool: SIGINT: $name: a traceback on stderr" "$(grep -A3 Traceback "$err" | head)"; return; fi
  if ! grep -Eq "^$tool: .*(interrupt|stopped by SIG)" <<<"$last"; then bad "$tool: SIGINT: $name: the last stderr line does not say \"$tool: ... interrupted\"" "$(tail -3 "$err")"; return; fi
  # (The workers' scratch root, kernelbench-rl-work-<uid>, stays, as /tmp
  # does; what a run made inside it must not.)
  local left; left=$(find "$TMPDIR" -mindepth 1 -not -path "$TMPDIR/kernelbench-rl-work-*"; find "$TMPDIR"/kernelbench-rl-work-* -mindepth 1 2>/dev/null)
  if [ -n "$left" ]; then bad "$tool: SIGINT: $name: temporaries left in TMPDIR" "$left"; return; fi
  ok "$tool: SIGINT: $name (exit 130; \"$last\")"
}
# kbcheck: the candidate loops forever; the verdict would be a timeout.
SIGINT_DELAY=1.5 sigint "verify a looping solution" kbcheck . stderr 0 -- \
  "${EXE[kbcheck]}" verify --device cpu "$TASK" "$T/solutions-cpu/infinite_loop" --timeout 60 --json "$WORK/sig-check.json"
[ -e "$WORK/sig-check.json" ] && bad "kbcheck: SIGINT: a verdict was written" || ok "kbcheck: SIGINT: no verdict written"
SIGINT_DELAY=1.5 sigint "profile a looping solution" kbprof . stderr 0 -- \
  "${EXE[kbprof]}" "$TASK" "$T/solutions-cpu/infinite_loop" --device cpu --timeout 60 --json "$WORK/sig-prof.json"
[ -e "$WORK/sig-prof.json" ] && bad "kbprof: SIGINT: a report was written" || ok "kbprof: SIGINT: no report written"
# kbsynth import: stopped after the first task; the report says what was done.
mkdir -p "$WORK/imp-src"
for k in 1 2 3 4 5; do
  for f in "$T"/tasks-src/kernelbench/level1/*.py; do cp "$f" "$WORK/imp-src/${k}_$(basename "$f")"; done
done
SIGINT_DELAY=0 sigint "import of 30 programs, after the first" kbsynth '\[1/30\]' stderr 240 -- \
  "${EXE[kbsynth]}" import "$WORK/imp-src" -o "$WORK/imp-sig" --id-prefix sig
R="$WORK/imp-sig/import-report.json"
if [ -f "$R" ] && jq -e '.interrupted == true and .summary.ok >= 1 and .summary.interrupted >= 1' "$R" >/dev/null; then
  ok "kbsynth: SIGINT: the report says what was done ($(jq -c .summary "$R"))"
else bad "kbsynth: SIGINT: the report says what was done" "$(jq -c .summary "$R" 2>&1)"; fi
unfinished=$(jq -r '.tasks[] | select(.status == "interrupted") | .dir' "$R" 2>/dev/null | while read -r d; do [ -e "$d" ] && echo "$d"; done)
[ -z "$unfinished" ] && ok "kbsynth: SIGINT: bundles not captured were removed" || bad "kbsynth: SIGINT: bundles not captured were removed" "$unfinished"
if [ "${EXE[kbsynth]}" != none ]; then
  "${EXE[kbsynth]}" import "$WORK/imp-src" -o "$WORK/imp-sig" --id-prefix sig --skip-existing >/dev/null 2>"$WORK/imp-resume.err"
  rc=$?
  if [ $rc = 0 ] && [ "$(jq '[.tasks[] | select(.skipped != null)] | length' "$R")" -ge 1 ] && [ "$(jq .summary.ok "$R")" -ge 29 ]
  then ok "kbsynth: the interrupted import resumes with --skip-existing ($(jq -c .summary "$R"))"
  else bad "kbsynth: the interrupted import resumes with --skip-existing (exit $rc)" "$(tail -3 "$WORK/imp-resume.err")"; fi
fi
# The same with SIGINT sent to kbsynth alone (kill -INT PID): it passes it on
# to capture.py, which stops as quietly.
rm -rf "$WORK/imp-sig2"
SIGINT_TARGET=pid SIGINT_DELAY=0 sigint "import, SIGINT to kbsynth alone" kbsynth '\[1/30\]' stderr 240 -- \
  "${EXE[kbsynth]}" import "$WORK/imp-src" -o "$WORK/imp-sig2" --id-prefix sig
if jq -e '.interrupted == true and .summary.interrupted >= 1' "$WORK/imp-sig2/import-report.json" >/dev/null 2>&1
then ok "kbsynth: SIGINT to kbsynth alone: the report says what was done"
else bad "kbsynth: SIGINT to kbsynth alone: the report says what was done"; fi
# kbsynth check: expected.py is stopped with SIGTERM (no traceback), nothing
# is judged.
SIGINT_TARGET=pid sigint "check, SIGINT to kbsynth alone" kbsynth 'Python outputs' stderr 120 -- \
  "${EXE[kbsynth]}" check "$TASK" "$T/tasks/scale_and_rowsum" --device cpu --no-compiled
# kbsynth filter: stops between tasks, manifest kept, resumable.
if [ "${EXE[kbsynth]}" != none ]; then
  "${EXE[kbsynth]}" compose -n 40 --seed 3 --profile tiny -o "$WORK/run-sig" >/dev/null 2>&1
fi
sigint "filter of 40 tasks" kbsynth 'filter parse' stderr 240 -- \
  "${EXE[kbsynth]}" filter "$WORK/run-sig" --stages parse,eager,deterministic -j 1
if [ "${EXE[kbsynth]}" != none ]; then
  "${EXE[kbsynth]}" filter "$WORK/run-sig" --stages parse,eager,deterministic -j 1 >/dev/null 2>"$WORK/filter-resume.err"
  rc=$?
  if [ $rc = 0 ] && grep -q "already filtered" "$WORK/filter-resume.err" && [ "$(jq -s '[.[] | select(.status == "composed")] | length' "$WORK/run-sig/manifest.jsonl")" = 0 ]
  then ok "kbsynth: the interrupted filter resumes"; else bad "kbsynth: the interrupted filter resumes (exit $rc)" "$(tail -3 "$WORK/filter-resume.err")"; fi
fi
# kbrollout with the local tiny policy on a CPU task.
SIGINT_DELAY=1 sigint "rollouts with the local tiny policy" kbrollout '\[kbrollout\]' stderr 120 -- \
  "${EXE[kbrollout]}" run --tasks "$RT" --out "$WORK/sig-roll.jsonl" --local-model "$TINY" --policy-device cpu \
  --samples 4 --max-turns 50
if [ -e "$WORK/sig-roll.jsonl" ] && ! jq -e -s . "$WORK/sig-roll.jsonl" >/dev/null 2>&1; then
  bad "kbrollout: SIGINT: the trajectory file is not valid JSONL"
else ok "kbrollout: SIGINT: the trajectory file is valid JSONL (or absent)"; fi
# kbpolicy generate, a long completion.
echo '[[1, 2, 3], [4, 5, 6]]' >"$WORK/p2.json"
SIGINT_DELAY=3 sigint "generate 100000 tokens" kbpolicy . stderr 0 -- \
  "${EXE[kbpolicy]}" generate --model "$TINY" --prompts "$WORK/p2.json" --max-new-tokens 100000 --device cpu
# kbtrain rft: many epochs; a checkpoint is kept on SIGINT.
SIGINT_DELAY=0.5 sigint "rft of many epochs" kbtrain 'step 1/' stderr 240 -- \
  "${EXE[kbtrain]}" rft "$D" --model "$TINY" --out "$WORK/tr/sig-rft" --epochs 100000 --keep-no-reward --device cpu
if [ -n "$(find "$WORK/tr/sig-rft" -name config.json 2>/dev/null)" ]
then ok "kbtrain: SIGINT: a checkpoint was written"; else bad "kbtrain: SIGINT: a checkpoint was written" "$(ls -R "$WORK/tr/sig-rft" 2>&1 | head)"; fi

# ---- kbserve ----------------------------------------------------------------------
expect "--listen without a port" kbserve 2 "listen" -- kbserve --tasks "$T/tasks" --listen 127.0.0.1 --gpus none
expect "--listen with a bad port" kbserve 2 "port" -- kbserve --tasks "$T/tasks" --listen 127.0.0.1:99999 --gpus none
expect "--gpus bogus" kbserve 2 "gpus" -- kbserve --tasks "$T/tasks" --gpus zero,one
expect "--compile-baseline bogus" kbserve 2 "^kbserve: --compile-baseline: bogus" -- kbserve --tasks "$T/tasks" --gpus none --compile-baseline bogus
expect "missing --tasks" kbserve 2 -- kbserve --tasks "$WORK/nonexistent" --gpus none
mkdir -p "$WORK/no-tasks"
expect "--tasks without a bundle" kbserve 2 "no task" -- kbserve --tasks "$WORK/no-tasks" --gpus none --listen 127.0.0.1:0 --state-dir "$WORK/serve-state0"
expect "--compile-baseline none (parsed: the next error is the task folder's)" kbserve 2 "no task" -- \
  kbserve --tasks "$WORK/no-tasks" --gpus none --listen 127.0.0.1:0 --state-dir "$WORK/serve-state5" --compile-baseline none
expect "an open address without a token" kbserve 2 "token" -- kbserve --tasks "$T/tasks" --gpus none --listen 0.0.0.0:0 --state-dir "$WORK/serve-state1"
expect "an unreadable --token-file" kbserve 2 -- "${AS_USER[@]}" "${EXE[kbserve]}" --tasks "$T/tasks" --gpus none --listen 127.0.0.1:0 --token-file "$UNREAD/report.jsonl" --state-dir "$WORK/serve-state2"
# SIGINT stops the server after a drain (nothing accepted: at once).
SIGINT_TARGET=pid SIGINT_DELAY=0.5 sigint "a serving server" kbserve 'listening on' stderr 60 -- \
  "${EXE[kbserve]}" --tasks "$T/tasks" --gpus none --listen 127.0.0.1:0 --state-dir "$WORK/serve-state3"

# ---- contract drift (issue 38) -----------------------------------------------------
# --version is exactly "TOOL VERSION", and --help's usage line names the tool
# and subcommand, never the executable's path (the tools run here by their
# full path, as build/tools/TOOL/TOOL).
for tool in "${TOOLS[@]}"; do
  if [ "${EXE[$tool]}" = none ]; then bad "$tool: version line and usage line ($tool was not built)"; continue; fi
  v=$(cat "$WORK/case${VERSION_CASE[$tool]}.out" "$WORK/case${VERSION_CASE[$tool]}.err")  # `TOOL --version 2>&1`, run above
  if [[ "$v" =~ ^$tool\ [0-9]+\.[0-9]+\.[0-9]+[^[:space:]]*$ ]]; then ok "$tool: --version is \"$tool VERSION\" ($v)"
  else bad "$tool: --version is \"$tool VERSION\"" "$v"; fi
  wrong=""
  help_text "$tool"  # the --help texts run above (help_check)
  u=$(grep '^Usage:' <<<"$text")
  [[ "$u" == "Usage: $tool "* ]] || wrong+="$u"$'\n'
  for sub in $(subcommands "$tool"); do
    help_text "$tool" "$sub"
    u=$(grep '^Usage:' <<<"$text")
    [[ "$u" == "Usage: $tool $sub "* ]] || wrong+="$u"$'\n'
  done
  if [ -z "$wrong" ]; then ok "$tool: --help's usage lines name the tool, not a path"
  else bad "$tool: --help's usage lines name the tool, not a path" "$wrong"; fi
done

# --json FILE (docs/cli.md): the JSON report, indented in a file, one line on
# stdout for "-"; refused with one line by a subcommand that has no JSON report.
json_file() {  # json_file NAME FILE JQ_TEST: FILE is an indented JSON document passing JQ_TEST
  if [ -f "$2" ] && [ "$(grep -c '' "$2")" -gt 1 ] && jq -e "$3" "$2" >/dev/null 2>&1; then ok "$1"
  else bad "$1" "$(head -c 400 "$2" 2>&1)"; fi
}
json_line() {  # json_line NAME FILE JQ_TEST: FILE is one JSON line passing JQ_TEST
  if [ "$(grep -c '' "$2" 2>/dev/null)" = 1 ] && jq -e "$3" "$2" >/dev/null 2>&1; then ok "$1"
  else bad "$1" "$(head -c 400 "$2" 2>&1)"; fi
}
expect "report --json FILE" kbreward 0 -- kbreward report "$C" --json "$WORK/rw-report.json"
json_file "kbreward: report --json FILE wrote the JSON report" "$WORK/rw-report.json" '.tool == "kbreward" and .stage == "report" and .overall.results == 8'
expect "report --json -" kbreward 0 -- kbreward report "$C" --json -
json_line "kbreward: report --json - printed one line" "$WORK/case$n.out" '.stage == "report"'
expect "score --json FILE" kbreward 0 -- kbreward score "$C" --json "$WORK/rw-score.jsonl"
if [ "$(jq -s 'map(select(.tool == "kbreward" and .stage == "score")) | length' "$WORK/rw-score.jsonl" 2>/dev/null)" = 8 ]
then ok "kbreward: score --json FILE wrote the 8 score records"; else bad "kbreward: score --json FILE wrote the 8 score records"; fi
expect "report --json with -o (two names for one output)" kbreward 2 "--json .*-o.*one" -- kbreward report "$C" --json "$WORK/rw2.json" -o "$WORK/rw2.html"
expect "unwritable --json" kbreward 2 "--json $NOWRITE_FILE: " -- kbreward report "$C" --json "$NOWRITE_FILE"
mkdir -p "$WORK/empty-replay"; chmod a+rx "$WORK/empty-replay"
expect "run --json FILE" kbrollout 0 -- kbrollout run --tasks "$TASK" --out "$WORK/rj.jsonl" \
  --replay "$WORK/empty-replay" --no-progress --json "$WORK/rollout-summary.json"
json_file "kbrollout: run --json FILE wrote the run's summary" "$WORK/rollout-summary.json" \
  '.tool == "kbrollout" and .stage == "run" and .rollouts == 1 and .done == 1 and .status == "ok"'
expect "eval --json -" kbrollout 0 -- kbrollout eval --tasks "$TASK" --out "$WORK/ej" --replay "$WORK/empty-replay" --no-progress --json -
json_line "kbrollout: eval --json - printed the summary as one line" "$WORK/case$n.out" '.stage == "eval" and .done == 1'
expect "unwritable --json" kbrollout 2 "--json $NOWRITE_FILE: " -- kbrollout run --tasks "$TASK" --out "$WORK/rj2.jsonl" \
  --replay "$WORK/empty-replay" --json "$NOWRITE_FILE"
expect "encode --json FILE" kbpolicy 0 -- kbpolicy encode --tokenizer "$TINY" --text hi --json "$WORK/enc.json"
json_file "kbpolicy: encode --json FILE wrote the ids" "$WORK/enc.json" '.ids | length > 0'
echo '[{"role": "user", "content": "hi"}]' >"$WORK/msgs.json"
expect "chat --json -" kbpolicy 0 -- kbpolicy chat --tokenizer "$TINY" --messages "$WORK/msgs.json" --json -
json_line "kbpolicy: chat --json - printed one line" "$WORK/case$n.out" '.template == "chatml"'
expect "decode --json (text, no JSON report)" kbpolicy 2 "^kbpolicy: --json: .*no JSON report" -- kbpolicy decode --tokenizer "$TINY" --ids '[1]' --json "$WORK/dec.json"
expect "encode: unwritable --json" kbpolicy 2 "--json $NOWRITE_FILE: " -- kbpolicy encode --tokenizer "$TINY" --text hi --json "$NOWRITE_FILE"
expect "rft --json FILE" kbtrain 0 -- kbtrain rft "$D" --model "$TINY" --out "$WORK/tr/oj" --max-steps 1 \
  --keep-no-reward --device cpu --no-progress --json "$WORK/tr/rft-summary.json"
json_file "kbtrain: rft --json FILE wrote the summary" "$WORK/tr/rft-summary.json" '.stage == "rft" and .steps == 1'
expect "diff --json -" kbtrain 0 -- kbtrain diff "$TINY" "$TINY" --json -
json_line "kbtrain: diff --json - printed one line" "$WORK/case$n.out" 'type == "object"'
expect "plot --json (HTML, no JSON report)" kbtrain 2 "^kbtrain: --json: .*no JSON report" -- kbtrain plot "$D" --out "$WORK/tr/p.html" --json "$WORK/tr/p.json"
expect "rft: unwritable --json" kbtrain 2 "--json $NOWRITE_FILE: " -- kbtrain rft "$D" --model "$TINY" --out "$WORK/tr/o4" --json "$NOWRITE_FILE"

# An output format follows -o's extension or --format; an extension no format
# has is refused before any work (exit 2), naming the ones there are.
expect "report -o x.pdf (no such format)" kbreward 2 '\.html' -- kbreward report "$C" -o "$WORK/x.pdf"
[ -e "$WORK/x.pdf" ] && bad "kbreward: -o x.pdf wrote a file" || ok "kbreward: -o x.pdf wrote nothing"
expect "report -o x.pdf --format html (the flag decides)" kbreward 0 -- kbreward report "$C" -o "$WORK/x.pdf" --format html
expect "report -o X.HTML" kbreward 0 -- kbreward report "$C" -o "$WORK/X.HTML"
grep -q '<html' "$WORK/X.HTML" 2>/dev/null && ok "kbreward: -o X.HTML is HTML" || bad "kbreward: -o X.HTML is HTML"

# Durations take a unit (docs/cli.md): a plain number is seconds; ms, s, m, h.
DUR='must be a duration'
expect "verify --timeout 5s --build-timeout 2m" kbcheck 0 -- kbcheck verify --device cpu -q --timeout 5s --build-timeout 2m "$TASK" "$SOL"
expect "verify --timeout 5parsecs" kbcheck 2 "^kbcheck: --timeout: $DUR" -- kbcheck verify --device cpu --timeout 5parsecs "$TASK" "$SOL"
expect "verify --cpu-time 500ms (whole seconds)" kbcheck 2 "cpu-time.*whole seconds" -- kbcheck verify --device cpu --cpu-time 500ms "$TASK" "$SOL"
expect "--timeout 2m --budget 500ms" kbprof 0 -- kbprof "$TASK" "$SOL" --device cpu -q --timeout 2m --budget 500ms
expect "--timeout 5parsecs" kbprof 2 "^kbprof: --timeout: $DUR" -- kbprof "$TASK" "$SOL" --device cpu --timeout 5parsecs
expect "run --timeout 5s --wall-s 1h (no server: exit 3, after the parse)" kbrollout 3 -- \
  kbrollout run --tasks "$RT" --out "$WORK/r-dur.jsonl" --policy http://127.0.0.1:9/v1 --model m --retries 1 --timeout 5s --wall-s 1h
expect "run --timeout 5parsecs" kbrollout 2 "^kbrollout: --timeout: $DUR" -- \
  kbrollout run --tasks "$RT" --out "$WORK/r-dur.jsonl" --policy http://127.0.0.1:9/v1 --model m --timeout 5parsecs
expect "filter --task-timeout 10m" kbsynth 0 -- kbsynth filter "$WORK/c-ok" --stages parse --task-timeout 10m --time-limit 1h
expect "import --timeout 5parsecs" kbsynth 2 "^kbsynth: --timeout: $DUR" -- kbsynth import "$PY1" -o "$WORK/imp-dur" --timeout 5parsecs
expect "--verify-timeout 1m --drain-s 500ms (parsed: the next error is the task folder's)" kbserve 2 "no task" -- \
  kbserve --tasks "$WORK/no-tasks" --gpus none --listen 127.0.0.1:0 --state-dir "$WORK/serve-state4" \
  --verify-timeout 1m --drain-s 500ms --session-idle-s 2h --profile-budget-s 5s
expect "--verify-timeout 5parsecs" kbserve 2 "^kbserve: --verify-timeout: $DUR" -- kbserve --tasks "$T/tasks" --gpus none --verify-timeout 5parsecs

chmod 755 "$WORK/in/locked" "$WORK/ro" 2>/dev/null
echo
echo "$pass passed, $fail failed"
if [ $fail -gt 0 ]; then printf 'failed: %s\n' "${FAILED[@]}"; exit 1; fi
exit 0
