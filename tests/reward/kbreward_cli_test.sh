#!/usr/bin/env bash
# Tool-level test of kbreward on testdata/reward: the default subcommand,
# --check/--prof, stdin, every output format, --compare, warnings and exit
# codes. Usage: kbreward_cli_test.sh path/to/kbreward  (KB_SOURCE_ROOT set)
set -uo pipefail
KB="$1"
ROOT="${KB_SOURCE_ROOT:?KB_SOURCE_ROOT must be set}"
D="$ROOT/testdata/reward"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect_eq WHAT EXPECTED ACTUAL
expect_eq() { [ "$2" == "$3" ] || fail "$1: expected [$2], got [$3]"; }
# expect_rc WHAT RC CMD...: runs CMD, stdout to $TMP/out, stderr to $TMP/err.
expect_rc() {
  local what="$1" want="$2"
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "$what: exit $rc, expected $want; stderr: $(head -c 400 "$TMP/err")"
}
contains() { grep -qF -- "$2" "$1" || fail "$1 lacks [$2]"; }

# The fixture is what its generator writes.
bash "$D/gen_run250.sh" a | cmp -s - "$D/run250_a.jsonl" || fail "run250_a.jsonl differs from gen_run250.sh a"
bash "$D/gen_run250.sh" b | cmp -s - "$D/run250_b.jsonl" || fail "run250_b.jsonl differs from gen_run250.sh b"

# Default subcommand with a check/profile pair: 2x over eager, 1.33x over compile -> 3.
expect_rc "pair" 0 "$KB" --check "$D/pair/check.json" --prof "$D/pair/prof.json"
expect_eq "pair lines" 1 "$(wc -l <"$TMP/out")"
expect_eq "pair reward" 3 "$(jq -r .reward "$TMP/out")"
expect_eq "pair scheme" milestone "$(jq -r .scheme.name "$TMP/out")"
expect_eq "pair header" "kbreward score ok" "$(jq -r '[.tool,.stage,.status]|join(" ")' "$TMP/out")"
expect_eq "pair timing method" cuda_events "$(jq -r .timing_method "$TMP/out")"
expect_eq "pair quiet" "" "$(cat "$TMP/err")"

# A swapped pair is refused, not scored.
expect_rc "swapped pair" 2 "$KB" score --check "$D/pair/prof.json" --prof "$D/pair/check.json"
contains "$TMP/err" "--check expects kbcheck reports"

# A JSONL stream on stdin, one candidate per (task_id, solution_hash).
expect_rc "stdin" 0 "$KB" score <"$D/candidates.jsonl"
expect_eq "stdin rewards" "3 2 1 -1 -1 null 3 -1" "$(jq -r .reward "$TMP/out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "infra marked" "infra_error" "$(jq -r 'select(.task_id=="kb_l2_006")|.excluded' "$TMP/out")"

# Noise-aware: kb_l3_007's 10% is inside the intervals -> 1.
expect_rc "noise-aware" 0 "$KB" score --noise-aware "$D/candidates.jsonl"
expect_eq "noise-aware rewards" "3 2 1 -1 -1 null 1 -1" "$(jq -r .reward "$TMP/out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "noise-aware in scheme" true "$(jq -r .scheme.noise_aware "$TMP/out" | sort -u)"

# Speed-up rewards: kb_l1_001 is 8/5 = 1.6x over compile, ln(10/5) over eager.
expect_rc "speedup" 0 "$KB" score --scheme speedup -o "$TMP/s.jsonl" "$D/candidates.jsonl"
expect_eq "speedup" 1.6 "$(jq -r 'select(.task_id=="kb_l1_001")|.reward' "$TMP/s.jsonl")"
expect_rc "log-speedup" 0 "$KB" score --scheme log-speedup --speedup-baseline eager "$D/candidates.jsonl"
expect_eq "log-speedup" 0.693147 "$(jq -r 'select(.task_id=="kb_l1_001")|.reward*1000000|round/1000000' "$TMP/out")"

# Custom values and margin go into every record.
expect_rc "values" 0 "$KB" score --margin 0.2 --both-value 10 --slower-value 0 "$D/candidates.jsonl"
expect_eq "margin 20%" "10 0 0" "$(jq -r .reward "$TMP/out" | head -3 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "margin recorded" 0.2 "$(jq -r .scheme.margin "$TMP/out" | sort -u)"

# Messy input: scored where possible, every problem named on stderr.
expect_rc "messy" 0 "$KB" score "$D/messy.jsonl"
expect_eq "messy lines" 7 "$(wc -l <"$TMP/out")"
contains "$TMP/err" "kbreward: warning: 1 candidates with a status outside the closed set (excluded): m3 (\"passed\")"
contains "$TMP/err" "messy.jsonl:7"
contains "$TMP/err" "0.1.0 (1 record), 0.2.0 (1 record)"
contains "$TMP/err" "m4 [compile]"
expect_rc "messy strict" 1 "$KB" score --strict "$D/messy.jsonl"

# Bad input: exit 2 and one line.
expect_rc "missing file" 2 "$KB" score /nonexistent/kbreward.jsonl
expect_eq "missing file one line" 1 "$(wc -l <"$TMP/err")"
contains "$TMP/err" "kbreward: /nonexistent/kbreward.jsonl: no such file or directory"
expect_rc "empty" 2 "$KB" score "$D/empty.jsonl"
contains "$TMP/err" "empty input: no records in $D/empty.jsonl"
expect_rc "empty stdin" 2 "$KB" score </dev/null
contains "$TMP/err" "empty input"
expect_rc "bad flag" 2 "$KB" score --scheme linear "$D/candidates.jsonl"
expect_eq "bad flag one line" 1 "$(wc -l <"$TMP/err")"
echo '{"task_id":"x","status":"infra_error"}' >"$TMP/infra.jsonl"
expect_rc "nothing scorable" 1 "$KB" score "$TMP/infra.jsonl"
contains "$TMP/err" "no candidate could be scored"

# Help teaches.
expect_rc "help" 0 "$KB" --help
contains "$TMP/out" "b(t, t0) = [(t0 - t) / t0 > margin]"
contains "$TMP/out" "report"
expect_rc "report help" 0 "$KB" report --help
contains "$TMP/out" "--compare"
expect_rc "version" 0 "$KB" --version

# Reports: text (default), JSON, Markdown, HTML by extension.
expect_rc "report text" 0 "$KB" report "$D/run250_a.jsonl"
contains "$TMP/out" "level 1    100         1  90.9%"
contains "$TMP/out" "all        250         4  90.2%"
expect_rc "report json" 0 "$KB" report --format json "$D/run250_a.jsonl"
expect_eq "json overall" "246 222" "$(jq -r '"\(.overall.scored) \(.overall.correct)"' "$TMP/out")"
expect_eq "json levels" "level 1,level 2,level 3" "$(jq -r '[.groups[].group]|join(",")' "$TMP/out")"
expect_rc "report md" 0 "$KB" report -o "$TMP/r.md" "$D/run250_a.jsonl"
contains "$TMP/r.md" "| level 3 | 50 | 1 | 85.7% |"
expect_rc "report html" 0 "$KB" report -o "$TMP/r.html" --title "Run A" "$D/run250_a.jsonl"
contains "$TMP/r.html" "<title>Run A</title>"
expect_rc "report stdin" 0 "$KB" report - <"$D/candidates.jsonl"
contains "$TMP/out" "kbreward run report: 8 tasks, 1 excluded"
expect_rc "report dir" 0 "$KB" report --format json "$D/pair"
expect_eq "dir report" 1 "$(jq -r .overall.correct "$TMP/out")"

# Scored output reads back into a report.
"$KB" score "$D/run250_a.jsonl" >"$TMP/scored.jsonl" 2>/dev/null
expect_rc "report of score output" 0 "$KB" report --format json "$TMP/scored.jsonl"
expect_eq "round trip" "246 222" "$(jq -r '"\(.overall.scored) \(.overall.correct)"' "$TMP/out")"

# Two runs side by side.
expect_rc "compare" 0 "$KB" report --compare "$D/run250_a.jsonl" "$D/run250_b.jsonl"
contains "$TMP/out" "fixed 4, broke 3, faster 30, slower 15, same 174"
expect_rc "compare json" 0 "$KB" report --compare "$D/run250_a.jsonl" "$D/run250_b.jsonl" --format json
expect_eq "compare broke" "kb_l2_011 kb_l2_012 kb_l2_013" \
  "$(jq -r '[.tasks[]|select(.change=="broke")|.task_id]|join(" ")' "$TMP/out")"
expect_rc "compare html" 0 "$KB" report --compare "$D/run250_a.jsonl" "$D/run250_b.jsonl" -o "$TMP/c.html"
contains "$TMP/c.html" "<svg"
expect_rc "compare plus inputs" 2 "$KB" report --compare "$D/run250_a.jsonl" "$D/run250_b.jsonl" "$D/pair"

# A pipe of kbcheck/kbprof reports, one compact object a line (what
# `for s in ...; do kbcheck ... --json -; done | kbreward report -` gives).
pipe_reports() {
  jq -c . "$D/pair/check.json"
  jq -c . "$D/pair/prof.json"
  jq -c '.task_id = "kernelbench/level1/20_LeakyReLU" | .solution_hash = "ab12" | .status = "compile_error"' "$D/pair/check.json"
}
pipe_reports | "$KB" report --format json - >"$TMP/out" 2>"$TMP/err"
expect_eq "pipe exit" 0 "$?"
expect_eq "pipe report" "2 2 1 1" "$(jq -r '"\(.overall.results) \(.overall.scored) \(.overall.correct) \(.overall.faster_than_compile)"' "$TMP/out")"
expect_eq "pipe report is one line" 1 "$(wc -l <"$TMP/out")"
expect_eq "pipe quiet" "" "$(cat "$TMP/err")"
# A bad line in the pipe is named by its number, and --strict fails on it.
{ pipe_reports | head -2; echo '{"tool": "kbcheck", "status": '; pipe_reports | tail -1; } \
  | "$KB" report --format json - >"$TMP/out" 2>"$TMP/err"
expect_eq "bad pipe line exit" 0 "$?"
contains "$TMP/err" "kbreward: warning: 1 lines that are not JSON (skipped): -:3"
expect_eq "bad pipe line report" "2 2" "$(jq -r '"\(.overall.results) \(.overall.scored)"' "$TMP/out")"
{ pipe_reports | head -2; echo 'oops'; } | "$KB" report --strict - >"$TMP/out" 2>"$TMP/err"
expect_eq "bad pipe line strict" 1 "$?"
contains "$TMP/err" "-:3"

# Concatenated JSON documents: reports as `--json FILE` writes them (indented),
# one after another, as `cat a.json b.json` or a loop of `--json FILE; cat`
# gives. Each is a record; every candidate is scored (score), and report
# keeps one result per task (docs/kbreward.md §3).
cat_reports() {
  jq . "$D/pair/check.json"
  jq . "$D/pair/prof.json"
  jq '.task_id = "kernelbench/level1/20_LeakyReLU" | .solution_hash = "ab12" | .status = "compile_error"' "$D/pair/check.json"
  jq '.solution_hash = "cd34" | .status = "incorrect"' "$D/pair/check.json"
}
cat_reports | "$KB" score - >"$TMP/out" 2>"$TMP/err"
expect_eq "concatenated documents exit" 0 "$?"
expect_eq "concatenated documents: a score per candidate" "3 -1 -1" "$(jq -r .reward "$TMP/out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "concatenated documents quiet" "" "$(cat "$TMP/err")"
cat_reports >"$TMP/cat.json"
expect_rc "concatenated documents in a file" 0 "$KB" score "$TMP/cat.json"
expect_eq "concatenated documents in a file: a score per candidate" 3 "$(wc -l <"$TMP/out")"
expect_rc "concatenated documents, report" 0 "$KB" report --format json "$TMP/cat.json"
expect_eq "concatenated documents, report: 4 records, one result per task" "4 2" "$(jq -r '"\(.inputs.records) \(.overall.results)"' "$TMP/out")"
contains "$TMP/err" "1 tasks with more than one candidate (the last one counted)"
# A bad line between documents is named, and the documents after it kept.
{ jq . "$D/pair/check.json"; echo 'oops {'; jq . "$D/pair/prof.json"; } | "$KB" score - >"$TMP/out" 2>"$TMP/err"
expect_eq "bad line between documents: the pair is still scored" 3 "$(jq -r .reward "$TMP/out")"
contains "$TMP/err" "1 lines that are not JSON (skipped): -:$(( $(jq . "$D/pair/check.json" | wc -l) + 1 ))"

# An eval folder (kbrollout eval's layout, with a report of it beside): only
# results.jsonl is read, not the trajectories (two records for one rollout
# here: an infra_error redone) nor timeline.json or report.json.
mkdir -p "$TMP/eval/rollouts"
traj() { jq -cn --arg t "$1" --arg s "$2" '{format: "kb-trajectory", format_version: 1, tool: "kbrollout", rollout_id: ($t + "#0"), task_id: $t, solution_hash: ("h" + $t), status: $s, timings: null}'; }
{ traj a infra_error; traj a ok; traj b incorrect; } >"$TMP/eval/rollouts/trajectories.jsonl"
{ jq -cn '{tool: "kbrollout", task_id: "a", level: 1, solution_hash: "ha", status: "ok", timings: null, rollout_id: "a#0", reward: 1}'
  jq -cn '{tool: "kbrollout", task_id: "b", level: 1, solution_hash: "hb", status: "incorrect", timings: null, rollout_id: "b#0", reward: -1}'
} >"$TMP/eval/rollouts/results.jsonl"
printf '{\n  "gpu": [],\n  "cpu": [{"slot": "0", "lease": 1}]\n}\n' >"$TMP/eval/rollouts/timeline.json"
"$KB" report --scheme correctness --format json "$TMP/eval" -o "$TMP/eval/report.json" 2>/dev/null
expect_rc "eval folder" 0 "$KB" report --scheme correctness --format json "$TMP/eval"
expect_eq "eval folder: the results only" "2 1 $TMP/eval/rollouts/results.jsonl" \
  "$(jq -r '"\(.overall.results) \(.overall.correct) \(.inputs.sources | join(","))"' "$TMP/out")"
expect_eq "eval folder: no warning" "" "$(cat "$TMP/err")"
mkdir -p "$TMP/traj-only"; cp "$TMP/eval/rollouts/trajectories.jsonl" "$TMP/eval/rollouts/timeline.json" "$TMP/traj-only/"
expect_rc "a folder of no reports" 2 "$KB" report "$TMP/traj-only"
contains "$TMP/err" "no report files in this directory (not reports: timeline.json, trajectories.jsonl"

# -o's extension decides the format; one no format has is refused (exit 2,
# one line, nothing written), --format overrides it; --json FILE is the JSON
# report (score: the records).
expect_rc "-o x.pdf" 2 "$KB" report -o "$TMP/x.pdf" "$D/candidates.jsonl"
expect_eq "-o x.pdf one line" 1 "$(wc -l <"$TMP/err")"
contains "$TMP/err" "kbreward: -o $TMP/x.pdf: no report format is written as .pdf; use .txt (or no extension), .json, .md or .html, or give --format"
[ ! -e "$TMP/x.pdf" ] || fail "-o x.pdf wrote a file"
expect_rc "-o r.TXT" 0 "$KB" report -o "$TMP/r.TXT" "$D/candidates.jsonl"
contains "$TMP/r.TXT" "kbreward run report: 8 tasks"
expect_rc "--json FILE" 0 "$KB" report --json "$TMP/r.json" "$D/candidates.jsonl"
expect_eq "--json FILE is the JSON report" "report 8" "$(jq -r '"\(.stage) \(.overall.results)"' "$TMP/r.json")"
expect_rc "--json with --format html" 2 "$KB" report --json "$TMP/r2.json" --format html "$D/candidates.jsonl"
expect_rc "score --json FILE" 0 "$KB" score --json "$TMP/s3.jsonl" "$D/candidates.jsonl"
expect_eq "score --json FILE lines" 8 "$(wc -l <"$TMP/s3.jsonl")"

# Scheme names: lib/reward's one spelling; anything else is refused (exit 2, one line).
for bad in log_speedup bogus; do
  expect_rc "scheme $bad" 2 "$KB" score --scheme "$bad" "$D/candidates.jsonl"
  expect_eq "scheme $bad one line" 1 "$(wc -l <"$TMP/err")"
  contains "$TMP/err" "kbreward: --scheme: $bad not in {milestone,speedup,log-speedup,correctness}"
done
expect_rc "report scheme bogus" 2 "$KB" report --scheme bogus "$D/candidates.jsonl"

# An output that cannot be written is refused before the input is read
# (a parent that is not a folder: fails for root too).
expect_rc "unwritable -o" 2 "$KB" report -o /dev/null/dir/r.html "$D/run250_a.jsonl"
expect_eq "unwritable -o one line" 1 "$(wc -l <"$TMP/err")"
contains "$TMP/err" "kbreward: -o/--out /dev/null/dir/r.html: /dev/null is not a directory"
expect_rc "unwritable score -o" 2 "$KB" score -o /dev/null/dir/s.jsonl "$D/candidates.jsonl"
expect_rc "score --out" 0 "$KB" score --out "$TMP/s2.jsonl" "$D/candidates.jsonl"
expect_eq "score --out lines" 8 "$(wc -l <"$TMP/s2.jsonl")"
[ -z "$(ls "$TMP" | grep '\.tmp\.')" ] || fail "a temporary output was left behind: $(ls "$TMP")"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "kbreward CLI: all checks passed"
