#!/usr/bin/env bash
# experiments/serve on the CPU: its own kbserve on a free port, the bundled
# run evaluated through it, kbreward's four reports; then make again does
# nothing, and an edited solution remakes the evaluations.
# Usage: experiment_test.sh SOURCE_ROOT BUILD_ROOT WORKDIR
set -euo pipefail
ROOT="$1"; BUILD="$2"; WORK="$3"
rm -rf "$WORK"; mkdir -p "$WORK"
cp -r "$ROOT/testdata/serve/run" "$WORK/solutions"
make -s -C "$ROOT/experiments/serve" BUILD="$BUILD" OUT="$WORK/out" SOLUTIONS="$WORK/solutions" >"$WORK/make1.log" 2>&1 ||
  { cat "$WORK/make1.log"; exit 1; }
for f in evaluations.jsonl report.txt report.json report.md report.html; do
  [ -s "$WORK/out/$f" ] || { echo "FAIL: $f missing"; exit 1; }
done
[ "$(jq -s 'map(select(.tool == "kbcheck")) | length' "$WORK/out/evaluations.jsonl")" = 2 ] || { echo "FAIL: want 2 kbcheck reports"; cat "$WORK/out/evaluations.jsonl"; exit 1; }
jq -e -s 'map({(.task_id): .status}) | add | .["testdata/linear_relu"] == "ok" and .["testdata/scale_and_rowsum"] == "incorrect"' \
  "$WORK/out/evaluations.jsonl" >/dev/null || { echo "FAIL: statuses"; exit 1; }
jq -e '.groups // .summary // . | tostring | test("2")' "$WORK/out/report.json" >/dev/null
grep -q "stopped by SIGTERM: drained" "$WORK/out/kbserve.log" || { echo "FAIL: the server was not drained"; cat "$WORK/out/kbserve.log"; exit 1; }
make -C "$ROOT/experiments/serve" BUILD="$BUILD" OUT="$WORK/out" SOLUTIONS="$WORK/solutions" >"$WORK/make-again.log" 2>&1
grep -q "Nothing to be done" "$WORK/make-again.log" || { echo "FAIL: a second make redid work"; cat "$WORK/make-again.log"; exit 1; }
sleep 1; echo "// edited" >> "$WORK/solutions/linear_relu/forward.cpp"
make -s -C "$ROOT/experiments/serve" BUILD="$BUILD" OUT="$WORK/out" SOLUTIONS="$WORK/solutions" evaluations >"$WORK/make2.log" 2>&1
grep -q "submitted linear_relu" "$WORK/make2.log" || { echo "FAIL: an edited solution did not remake the evaluations"; cat "$WORK/make2.log"; exit 1; }
echo "experiments/serve: ok"
