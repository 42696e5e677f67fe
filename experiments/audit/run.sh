#!/usr/bin/env bash
# The audit of published solutions (issue 37): each solution of a corpus
# (claims.json and <id>/model_new.py, written by extract.py outside the
# tree) through kbcheck --policy kernelbench, then kbprof where that
# passed, with the claimed speed-ups beside ours in PREFIX.md and
# PREFIX.json (--out; with --kbreward also kbreward's tables and page).
# README.md says what is measured and how; the Makefile wraps it.
#
#   experiments/audit/run.sh [--audit .kb/audit] [--kb .kb/kb-tasks] [--device cuda|cpu] [--out DIR] ...
#   experiments/audit/run.sh --prepare-from KB_DIR [--audit .kb/audit] [--kb .kb/kb-tasks]
#
# --prepare-from copies the task files claims.json names (and the version
# manifest) from a KernelBench folder into --kb, so that a machine without
# KernelBench (the GPU's) gets just those, under .kb/ (git-ignored).
#
# Steps: (1) kbsynth import of the needed tasks (no AOTInductor package:
# the solutions are Python, and kbprof times them against eager and
# torch.compile in Python, as KernelBench and the corpus did: kbprof
# --compile-baseline python, docs/kbprof.md); (2) kbcheck on
# every solution, -j at once (static, build and verify: CPU-bound builds;
# the verifications share the GPU, which is fine for correctness); (3)
# kbprof, one at a time (timing needs the GPU to itself), on those kbcheck
# passed, each bounded, stopping before --deadline; (4) the table.
# Every command's report is kept in --work; a rerun reuses the imports,
# the build cache and the baseline cache.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
AUDIT=$ROOT/.kb/audit KB=$ROOT/.kb/kb-tasks DEVICE=cuda BIN=$ROOT/build WORK=/tmp/kb-audit OUT=$HERE/results
JOBS=4 COMPILE_BASELINE=python ONLY="" PREPARE="" DEADLINE=480 CHECK_TIMEOUT=300 PROF_TIMEOUT=120 BUDGET=3 MAX_ROUNDS=30
IMPORT_TIMEOUT=240 WORKER_TIMEOUT=120 TABLES=""
usage() {
  sed -n '2,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  cat <<EOF
Options (defaults in brackets):
  --audit DIR         claims.json and the solutions [$AUDIT]
  --kb DIR            KernelBench folder the tasks are imported from (level1..3, kernelbench-version.json) [$KB]
  --prepare-from DIR  copy the needed task files from DIR into --kb, then stop
  --device D          cuda, cuda:N or cpu [$DEVICE]
  --bin DIR           build folder with tools/{kbsynth,kbcheck,kbprof} [$BIN]
  --work DIR          imported tasks, reports, logs [$WORK]
  --out PREFIX        writes PREFIX.md and PREFIX.json [$OUT]
  --kbreward          also kbreward's tables of the same reports and the page: PREFIX.kbreward.{md,json}, PREFIX.html
  --only IDS          comma-separated solution ids (folder names) [all]
  --compile-baseline K  kbprof --compile-baseline (python, auto, aoti, none) [$COMPILE_BASELINE]
  -j N                kbcheck runs at once [$JOBS]
  --deadline S        no kbprof starts after S seconds from the start [$DEADLINE]
  --check-timeout S   bound of one kbcheck [$CHECK_TIMEOUT]
  --prof-timeout S    bound of one kbprof [$PROF_TIMEOUT]
  --budget S          kbprof --budget [$BUDGET]; --max-rounds N [$MAX_ROUNDS]
  --import-timeout S  bound of the import [$IMPORT_TIMEOUT]
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --audit) AUDIT=$2; shift ;;
    --kb) KB=$2; shift ;;
    --prepare-from) PREPARE=$2; shift ;;
    --device) DEVICE=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --work) WORK=$2; shift ;;
    --out) OUT=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --compile-baseline) COMPILE_BASELINE=$2; shift ;;
    -j) JOBS=$2; shift ;;
    --deadline) DEADLINE=$2; shift ;;
    --check-timeout) CHECK_TIMEOUT=$2; shift ;;
    --prof-timeout) PROF_TIMEOUT=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    --max-rounds) MAX_ROUNDS=$2; shift ;;
    --import-timeout) IMPORT_TIMEOUT=$2; shift ;;
    --kbreward) TABLES=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done
CLAIMS=$AUDIT/claims.json
[ -f "$CLAIMS" ] || { echo "run.sh: no $CLAIMS (experiments/audit/extract.py writes it)" >&2; exit 2; }
command -v jq >/dev/null || { echo "run.sh: needs jq" >&2; exit 2; }

# The solutions: "id level task" per line.
ids() {
  jq -r '.solutions[] | "\(.id) \(.level) \(.task)"' "$CLAIMS" |
    if [ -n "$ONLY" ]; then grep -E "^($(echo "$ONLY" | tr , '|')) "; else cat; fi
}

if [ -n "$PREPARE" ]; then
  n=0
  while read -r id level task; do
    mkdir -p "$KB/level$level"
    cp "$PREPARE/level$level/$task.py" "$KB/level$level/" || exit 1
    n=$((n + 1))
  done < <(ids)
  [ -f "$PREPARE/kernelbench-version.json" ] && cp "$PREPARE/kernelbench-version.json" "$KB/"
  echo "run.sh: $n task files from $PREPARE into $KB"
  exit 0
fi

T0=$(date +%s)
KBSYNTH=$BIN/tools/kbsynth/kbsynth KBCHECK=$BIN/tools/kbcheck/kbcheck KBPROF=$BIN/tools/kbprof/kbprof
for t in "$KBSYNTH" "$KBCHECK" "$KBPROF"; do [ -x "$t" ] || { echo "run.sh: no $t (--bin)" >&2; exit 2; }; done
mkdir -p "$WORK/kb" "$WORK/reports" "$WORK/tasks"
export KB_BASELINE_CACHE=${KB_BASELINE_CACHE:-$WORK/baselines}

# 1. The tasks: the needed files (a KernelBench folder of just those, with
# the version manifest, so the ids carry the version) imported once.
rm -rf "$WORK/kb" && mkdir -p "$WORK/kb"
[ -f "$KB/kernelbench-version.json" ] && cp "$KB/kernelbench-version.json" "$WORK/kb/"
missing=0
while read -r id level task; do
  mkdir -p "$WORK/kb/level$level"
  if [ -f "$KB/level$level/$task.py" ]; then cp "$KB/level$level/$task.py" "$WORK/kb/level$level/"
  else echo "run.sh: $id: no $KB/level$level/$task.py (--prepare-from)" >&2; missing=$((missing + 1)); fi
done < <(ids)
prefix=kernelbench
v=$(jq -r '.version // empty' "$WORK/kb/kernelbench-version.json" 2>/dev/null)
[ -n "$v" ] && prefix=kernelbench-$v
echo "== import $(date +%T)"
timeout "$IMPORT_TIMEOUT" "$KBSYNTH" import "$WORK/kb" -o "$WORK/tasks" --compiled none --skip-existing \
  -j "$JOBS" --report "$WORK/import-report.json" >"$WORK/import.jsonl" 2>"$WORK/import.log"
echo "import rc=$? ($(grep -c '"status": *"ok"' "$WORK/import.jsonl") tasks captured); $(tail -1 "$WORK/import.log")"

# 2. kbcheck, -j at once.
check_one() {
  local id=$1 level=$2 task=$3 t="$WORK/tasks/$prefix/level$2/$3" r="$WORK/reports/$1"
  if [ ! -f "$t/task.json" ]; then  # the static stage needs no task: its verdict is still recorded
    "$KBCHECK" static "$AUDIT/$id" --policy kernelbench -q --json "$r.static.json" >"$r.check.log" 2>&1
    jq -c --arg tid "$prefix/level$level/$task" '{tool: "kbcheck", written_by: "run.sh", task_id: $tid, solution_hash,
            status: (if .status == "ok" then "not_run" else .status end), stage: "static",
            message: (if .status == "ok" then "the task was not imported (static: ok)" else .message end),
            stages: {static: {status: .status, report: .}}}' "$r.static.json" >"$r.check.json" 2>/dev/null ||
      echo "{\"tool\":\"kbcheck\",\"written_by\":\"run.sh\",\"task_id\":\"$prefix/level$level/$task\",\"status\":\"not_run\",\"message\":\"the task was not imported\"}" >"$r.check.json"
    echo "  $id: $(jq -r .status "$r.check.json") (task not imported)"; return
  fi
  timeout "$CHECK_TIMEOUT" "$KBCHECK" "$t" "$AUDIT/$id" --policy kernelbench --device "$DEVICE" --timeout "$WORKER_TIMEOUT" \
    -q --json "$r.check.json" >"$r.check.log" 2>&1
  local rc=$?
  if [ $rc -eq 124 ] || [ ! -s "$r.check.json" ]; then
    echo "{\"tool\":\"kbcheck\",\"written_by\":\"run.sh\",\"task_id\":\"$prefix/level$level/$task\",\"status\":\"not_run\",\"message\":\"kbcheck gave no report (exit $rc; the audit's bound is ${CHECK_TIMEOUT} s)\"}" >"$r.check.json"
  fi
  echo "  $id: $(jq -r .status "$r.check.json")"
}
export -f check_one
export WORK AUDIT KBCHECK DEVICE CHECK_TIMEOUT WORKER_TIMEOUT prefix
echo "== kbcheck -j $JOBS $(date +%T)"
ids | xargs -P "$JOBS" -L 1 bash -c 'check_one "$@"' _

# 3. kbprof, one at a time, where kbcheck passed. A profile that gave no
# report gets one written here (written_by "run.sh", status not_run), with
# the candidate's task_id and solution_hash from its kbcheck report, so that
# kbreward joins it to the candidate (and excludes it, not_run being no
# status of its closed set) instead of skipping it.
not_run_prof() {
  jq -c --arg msg "$2" '{tool: "kbprof", written_by: "run.sh", task_id, solution_hash, status: "not_run", message: $msg}' \
    "$1.check.json" >"$1.prof.json"
}
echo "== kbprof $(date +%T)"
while read -r id level task; do
  r="$WORK/reports/$id"
  rm -f "$r.prof.json"
  [ "$(jq -r .status "$r.check.json" 2>/dev/null)" = ok ] || continue
  if [ $(( $(date +%s) - T0 )) -ge "$DEADLINE" ]; then
    not_run_prof "$r" "the audit's deadline (${DEADLINE} s) passed before this profile"
    echo "  $id: not_run (deadline)"; continue
  fi
  t="$WORK/tasks/$prefix/level$level/$task"
  timeout "$PROF_TIMEOUT" "$KBPROF" "$t" "$AUDIT/$id" --device "$DEVICE" --policy kernelbench --compile-baseline "$COMPILE_BASELINE" \
    --budget "$BUDGET" --max-rounds "$MAX_ROUNDS" --timeout "$PROF_TIMEOUT" -q --json "$r.prof.json" >"$r.prof.log" 2>&1
  rc=$?
  if [ $rc -eq 124 ] || [ ! -s "$r.prof.json" ]; then
    not_run_prof "$r" "kbprof gave no report (exit $rc; the audit's bound is ${PROF_TIMEOUT} s)"
  fi
  echo "  $id: $(jq -r '[.status, (.speedup_vs_eager // "-"), (.speedup_vs_compile // "-")] | join(" ")' "$r.prof.json")"
done < <(ids)

# 4. The tables: ours, and with --kbreward kbreward's over the same reports
# (and its page, $OUT.html); KernelBench's verdicts beside ours when
# kb_harness.py wrote kb-harness.json beside $OUT.
KBREWARD=$BIN/tools/kbreward/kbreward extra=() made=""
if [ -n "$TABLES" ]; then
  if [ -x "$KBREWARD" ]; then extra+=(--kbreward "$KBREWARD" --html); made=", $OUT.html, $OUT.kbreward.md, $OUT.kbreward.json"
  else echo "run.sh: no $KBREWARD: no kbreward tables" >&2; fi
fi
python3 "$HERE/report.py" "$CLAIMS" "$WORK" "$OUT" --device "$DEVICE" --tasks "$WORK/tasks/$prefix" --only "$ONLY" \
  --seconds $(( $(date +%s) - T0 )) --kb-harness "$(dirname "$OUT")/kb-harness.json" "${extra[@]}"
echo "== done in $(( $(date +%s) - T0 )) s: $OUT.md, $OUT.json$made"
[ $missing -eq 0 ]
