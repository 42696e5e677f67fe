#!/usr/bin/env bash
# `meson install --destdir` puts a working toolchain under a prefix that
# reads nothing from the source tree (docs/install.md): the installed
# kbcheck, kbsynth, kbrollout, kbprof and kbreward run (and every tool
# answers --help) from an empty directory with a cleaned
# environment, and each data file they need is shown to be the installed
# copy by marking that copy (a changed policy name, a marker in the agent
# guide and the interface header, a file the installed capture.py writes) or
# by removing it and reading the installed path in the error.
# Usage: install_test.sh BUILD_DIR SOURCE_ROOT [MESON]
set -uo pipefail
BUILD="$1"; ROOT="$2"; MESON="${3:-meson}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../support/expect.sh"

DEST="$TMP/dest"
if ! "$MESON" install -C "$BUILD" --no-rebuild --destdir "$DEST" >"$TMP/install.log" 2>&1; then
  bad "meson install --destdir"; tail -20 "$TMP/install.log"; exit 1
fi
ok "meson install --destdir"
BIN="$(dirname "$(find "$DEST" -path '*/bin/kbcheck' -type f | head -1)")"
PREFIX="$(dirname "$BIN")"
# Move the installed tree: the tools find their data from where they are.
mv "$PREFIX" "$TMP/moved"
PREFIX="$TMP/moved"; BIN="$PREFIX/bin"; DATA="$PREFIX/share/kernelbench-rl"
LIBEXEC="$PREFIX/libexec/kernelbench-rl"
for f in bin/kbcheck bin/kbsynth bin/kbrollout bin/kbprof bin/kbreward \
         libexec/kernelbench-rl/kbcheck-worker libexec/kernelbench-rl/kb-agent-jail \
         share/kernelbench-rl/policy/default.json share/kernelbench-rl/testdata/synth/seeds.json \
         share/kernelbench-rl/docs/agent-guide.md share/kernelbench-rl/include/kb/solution.h \
         share/kernelbench-rl/include/kb/nvrtc/cuda_runtime.h \
         share/kernelbench-rl/scripts/capture.py share/kernelbench-rl/scripts/baseline.py \
         share/kernelbench-rl/scripts/expected.py share/kernelbench-rl/scripts/kbtask.py \
         share/kernelbench-rl/scripts/read_rows.py share/kernelbench-rl/scripts/synth_filter.py \
         share/kernelbench-rl/scripts/synth_ast.py; do
  expect "installed $f" test -e "$PREFIX/$f"
done

# The inputs, copied out of the source tree; the tools run from an empty
# directory with only PATH and HOME set.
mkdir -p "$TMP/in" "$TMP/cwd" "$TMP/home" "$TMP/out"
cp -r "$ROOT/testdata/solutions/vec_gelu" "$TMP/in/vec_gelu"
cp -r "$ROOT/testdata/agent/tasks/cpu_relu" "$TMP/in/cpu_relu"
cp "$ROOT/testdata/tasks-src/kernelbench/level1/1_ReLU_Scale.py" "$TMP/in/model.py"
run() { (cd "$TMP/cwd" && env -i PATH=/usr/bin:/bin HOME="$TMP/home" "$@"); }

for t in kbcheck kbsynth kbrollout kbprof kbreward kbtrain kbpolicy; do
  [ -x "$BIN/$t" ] || { [ "$t" = kbtrain ] || [ "$t" = kbpolicy ]; } || bad "installed bin/$t"
  [ -x "$BIN/$t" ] || continue  # kbtrain and kbpolicy are built only with LibTorch
  run "$BIN/$t" --help >"$TMP/out/$t-help.txt" 2>&1
  expect "$t --help exits 0" test $? -eq 0
done

# kbcheck static: the installed default policy and interface header.
jq '.name = "installed-copy"' "$DATA/policy/default.json" >"$TMP/p.json" && mv "$TMP/p.json" "$DATA/policy/default.json"
run "$BIN/kbcheck" static "$TMP/in/vec_gelu" --json "$TMP/out/static.json" 2>"$TMP/out/static.err"
rc=$?
expect "kbcheck static exits 0 (rc=$rc)" test $rc -eq 0
expect "kbcheck static read the installed policy" \
  test "$(jq -r '.policy.name' "$TMP/out/static.json" 2>/dev/null)" = installed-copy
cp "$DATA/include/kb/solution.h" "$TMP/solution.h"
echo '#error "the installed interface header"' >>"$DATA/include/kb/solution.h"
run "$BIN/kbcheck" static "$TMP/in/vec_gelu" >/dev/null 2>"$TMP/out/static-h.err"
expect "kbcheck static compiled against the installed header" \
  grep -q "the installed interface header" "$TMP/out/static-h.err"
cp "$TMP/solution.h" "$DATA/include/kb/solution.h"

# kbcheck verify on the CPU: the installed worker (libexec), and no other.
cp -r "$ROOT/testdata/tasks/linear_relu" "$TMP/in/linear_relu"
cp -r "$ROOT/testdata/solutions-cpu/ok_linear_relu" "$TMP/in/ok_linear_relu"
run "$BIN/kbcheck" verify --device cpu "$TMP/in/linear_relu" "$TMP/in/ok_linear_relu" \
  --json "$TMP/out/verify.json" >/dev/null 2>"$TMP/out/verify.err"
rc=$?
expect "kbcheck verify exits 0 (rc=$rc)" test $rc -eq 0
expect "kbcheck verify: status ok" test "$(jq -r '.status' "$TMP/out/verify.json" 2>/dev/null)" = ok
mv "$LIBEXEC/kbcheck-worker" "$TMP/kbcheck-worker"
run "$BIN/kbcheck" verify --device cpu "$TMP/in/linear_relu" "$TMP/in/ok_linear_relu" >/dev/null 2>"$TMP/out/verify-gone.err"
expect "kbcheck verify looks for the installed worker" grep -qF "$LIBEXEC/kbcheck-worker" "$TMP/out/verify-gone.err"
mv "$TMP/kbcheck-worker" "$LIBEXEC/kbcheck-worker"

# kbprof on the CPU (host clock) and kbreward on its report: the installed
# worker times the copied task and solution; the report scores.
cp -r "$ROOT/testdata/solutions-cpu-timed/ok_host_object" "$TMP/in/ok_host_object"
run "$BIN/kbprof" "$TMP/in/linear_relu" "$TMP/in/ok_host_object" --device cpu \
  --budget-s 0.2 --json "$TMP/out/prof.json" >/dev/null 2>"$TMP/out/prof.err"
rc=$?
expect "kbprof --device cpu exits 0 (rc=$rc)" test $rc -eq 0
expect "kbprof: status ok" test "$(jq -r '.status' "$TMP/out/prof.json" 2>/dev/null)" = ok
run "$BIN/kbreward" score "$TMP/out/prof.json" --scheme correctness >"$TMP/out/score.jsonl" 2>"$TMP/out/score.err"
rc=$?
expect "kbreward score exits 0 (rc=$rc)" test $rc -eq 0
expect "kbreward: the correct solution scores 1" jq -e '.reward == 1' "$TMP/out/score.jsonl"

# kbsynth: the installed seed catalog and Python helpers.
run "$BIN/kbsynth" seeds >"$TMP/out/seeds.out" 2>"$TMP/out/seeds.err"
expect "kbsynth seeds exits 0" test $? -eq 0
run "$BIN/kbsynth" compose -n 2 --profile tiny -o "$TMP/out/compose" >/dev/null 2>"$TMP/out/compose.err"
expect "kbsynth compose exits 0" test $? -eq 0
expect "kbsynth compose wrote 2 programs" test "$(ls "$TMP/out/compose/programs" 2>/dev/null | wc -l)" = 2
mv "$DATA/testdata/synth/seeds.json" "$TMP/seeds.json"
run "$BIN/kbsynth" seeds >/dev/null 2>"$TMP/out/seeds-gone.err"
expect "kbsynth seeds looks for the installed catalog" grep -qF "$DATA/testdata/synth/seeds.json" "$TMP/out/seeds-gone.err"
mv "$TMP/seeds.json" "$DATA/testdata/synth/seeds.json"
# capture.py writes a mark beside itself: the installed copy ran.
sed -i '0,/^import os$/s//import os\nopen(__file__ + ".ran", "w").close()/' "$DATA/scripts/capture.py"
run "$BIN/kbsynth" import "$TMP/in/model.py" -o "$TMP/out/tasks" >/dev/null 2>"$TMP/out/import.err"
rc=$?
expect "kbsynth import exits 0 (rc=$rc)" test $rc -eq 0
expect "kbsynth import ran the installed capture.py" test -e "$DATA/scripts/capture.py.ran"

# kbrollout: the installed agent guide and interface header go into the
# workspace (no policy server: the run ends as an infrastructure error).
echo "<!-- installed guide -->" >>"$DATA/docs/agent-guide.md"
echo "// installed header" >>"$DATA/include/kb/solution.h"
run "$BIN/kbrollout" run --tasks "$TMP/in/cpu_relu" --out "$TMP/out/r.jsonl" --work-dir "$TMP/out/ws" \
  --policy http://127.0.0.1:9/v1 --model m --retries 1 --no-progress >/dev/null 2>"$TMP/out/rollout.err"
rc=$?
expect "kbrollout without a server exits 3 (rc=$rc)" test $rc -eq 3
guide="$(find "$TMP/out/ws" -name AGENT.md | head -1)"
header="$(find "$TMP/out/ws" -path '*/include/kb/solution.h' | head -1)"
expect "kbrollout used the installed agent guide" grep -q "installed guide" "$guide"
expect "kbrollout used the installed interface header" grep -q "installed header" "$header"

if [ $fails -ne 0 ]; then
  echo "--- stderr of the runs"; tail -n 5 "$TMP"/out/*.err
  echo "$fails failed"; exit 1
fi
echo "all passed"
