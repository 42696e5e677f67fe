#!/usr/bin/env bash
# Tool-level test of kbsynth synthesis on the CPU (issue 7's CI acceptance):
#   seeds; compose 200 tasks with the rule composer (tiny profile) and run all
#   of them through the CPU filters (parse, eager with the predicted output
#   shape, deterministic, nondegenerate, decontam against the sample problems;
#   timing recorded as skipped); the funnel; a compose run stopped half-way and
#   resumed gives the same manifest and programs; a filter run killed half-way
#   and resumed gives the same manifest as an uninterrupted one; torch.compile
#   and bundles on a few tasks; decontamination of a renamed copy; the GPU
#   run's 300 programs checked for shapes on the meta device; a crashing and a
#   hanging task, --time-limit and its resume; error exits.
# Usage: kbsynth_synth_test.sh KBSYNTH WORKDIR
set -uo pipefail
KBSYNTH="$1"; WORK="$2"
ROOT="${KB_SOURCE_ROOT:?}"
REF="$ROOT/testdata/tasks-src/kernelbench"
source "$(dirname "${BASH_SOURCE[0]}")/../support/expect.sh"
rm -rf "$WORK"; mkdir -p "$WORK"
J=$(nproc); [ "$J" -gt 4 ] && J=4

# 1. The seed catalog.
"$KBSYNTH" seeds >"$WORK/seeds.json" 2>"$WORK/seeds.err"
expect "seeds exits 0" test $? -eq 0
expect "seeds: more than 120 composable operators" test "$(jq .composable "$WORK/seeds.json")" -gt 120
expect "seeds: standalone transformers modules" test "$(jq .composable_transformers "$WORK/seeds.json")" -ge 10
expect "seeds: dropout excluded as stochastic" \
  test "$(jq -r '.excluded_ops[] | select(.name == "torch.nn.Dropout") | .reason' "$WORK/seeds.json" | grep -c stochastic)" = 1
expect "seeds --all: one line per crawled op" \
  test "$("$KBSYNTH" seeds --all 2>/dev/null | wc -l)" = "$(jq .crawled "$WORK/seeds.json")"

# 2. Compose 200, and the same run stopped after 100 and resumed.
A="$WORK/a"; B="$WORK/b"
"$KBSYNTH" compose -n 200 --seed 5 --profile tiny -o "$A" >"$WORK/compose-a.jsonl" 2>"$WORK/compose-a.err"
expect "compose exits 0" test $? -eq 0
expect "compose: 200 tasks composed" test "$(jq -s '[.[] | select(.status == "composed")] | length' "$A/manifest.jsonl")" = 200
expect "compose: 200 programs" test "$(ls "$A/programs" | wc -l)" = 200
"$KBSYNTH" compose -n 200 --seed 5 --profile tiny -o "$B" --stop-after 100 >/dev/null 2>"$WORK/compose-b1.err"
expect "stopped run has 100 tasks" test "$(wc -l <"$B/manifest.jsonl")" = 100
"$KBSYNTH" compose -n 200 --seed 5 --profile tiny -o "$B" >/dev/null 2>"$WORK/compose-b2.err"
expect "resume composes the other 100" grep -q "composing 100 tasks (100 already" "$WORK/compose-b2.err"
expect "resumed compose manifest equals the uninterrupted one" cmp -s "$A/manifest.jsonl" "$B/manifest.jsonl"
expect "resumed programs equal the uninterrupted ones" diff -r -q "$A/programs" "$B/programs"
expect "a different seed for the same folder: exit 2" \
  test "$(exit_code "$KBSYNTH" compose -n 200 --seed 6 --profile tiny -o "$B")" = 2

# 3. All 200 through the CPU filters.
"$KBSYNTH" filter "$A" --stages parse,eager,deterministic,nondegenerate,decontam,timing --reference "$REF" \
  -j "$J" >"$WORK/filter-a.out" 2>"$WORK/filter-a.err"
expect "filter exits 0" test $? -eq 0
cat "$WORK/filter-a.out"
M="$A/manifest.jsonl"
expect "all 200 programs parse" test "$(jq -s '[.[] | select(.filter.stages.parse.status == "pass")] | length' "$M")" = 200
expect "all 200 programs run in eager PyTorch on the CPU, with the predicted output shape" \
  test "$(jq -s '[.[] | select(.filter.stages.eager.status == "pass")] | length' "$M")" = 200
expect "every dropped task has a stage and a reason" \
  test "$(jq -s '[.[] | select(.status == "dropped") | select(.filter.dropped_at == null or .filter.reason == null)] | length' "$M")" = 0
expect "timing is skipped (not passed) without a GPU" \
  test "$(jq -s '[.[] | select(.filter.stages.timing.status == "pass")] | length' "$M")" = 0
expect "decontam names the nearest reference" \
  test "$(jq -s '[.[] | select(.filter.stages.decontam.status == "pass") | select(.filter.stages.decontam.nearest | startswith("kernelbench/"))] | length' "$M")" -gt 0
expect "most tasks are kept" test "$(jq -s '[.[] | select(.status == "kept")] | length' "$M")" -gt 150
expect "the funnel is printed" grep -q "filter funnel" "$WORK/filter-a.out"
expect "the similarity histogram is printed" grep -q "AST similarity to the nearest reference" "$WORK/filter-a.out"
"$KBSYNTH" stats "$A" >"$WORK/stats.txt"
expect "stats prints the op-count mix" grep -q "op-count mix" "$WORK/stats.txt"
expect "stats --json: funnel of 6 stages" test "$("$KBSYNTH" stats "$A" --json | jq '.funnel | length')" = 6
expect "refiltering with other settings needs --force (exit 2)" \
  test "$(exit_code "$KBSYNTH" filter "$A" --stages parse,eager --reference "$REF")" = 2

# 4. A filter run killed half-way and resumed = an uninterrupted one.
C="$WORK/c"; D="$WORK/d"
"$KBSYNTH" compose -n 40 --seed 8 --profile tiny -o "$C" >/dev/null 2>&1
cp -r "$C" "$D"
ST=parse,eager,deterministic,nondegenerate,decontam
# The uninterrupted run in one chunk (the manifest does not depend on --chunk;
# --chunk 4 starts a worker per 4 tasks: 18 s against 4 s here); the run
# that is killed and resumed in chunks of 4, so that it is killed mid-run.
"$KBSYNTH" filter "$C" --stages $ST --reference "$REF" -j 1 >/dev/null 2>"$WORK/filter-c.err"
"$KBSYNTH" filter "$D" --stages $ST --reference "$REF" -j 1 --chunk 4 >/dev/null 2>"$WORK/filter-d1.err" &
pid=$!
for _ in $(seq 1 600); do
  n=$(grep -c "filter parse" "$WORK/filter-d1.err" 2>/dev/null || true)
  [ "${n:-0}" -ge 12 ] && break
  sleep 0.2
done
kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
done1=$(jq -s '[.[] | select(.filter != null)] | length' "$D/manifest.jsonl")
expect "the killed run had recorded some but not all tasks ($done1)" test "$done1" -gt 0 -a "$done1" -lt 40
"$KBSYNTH" filter "$D" --stages $ST --reference "$REF" -j 1 --chunk 4 >/dev/null 2>"$WORK/filter-d2.err"
expect "the resumed run filtered only the rest" grep -q "($done1 already filtered)" "$WORK/filter-d2.err"
expect "resumed filter manifest equals the uninterrupted one" cmp -s "$C/manifest.jsonl" "$D/manifest.jsonl"

# 5. torch.compile and bundles on a few tasks (every stage).
E="$WORK/e"
"$KBSYNTH" compose -n 3 --seed 2 --profile tiny -o "$E" --mix 2:1 >/dev/null 2>&1
"$KBSYNTH" filter "$E" --reference "$REF" --bundles -j 2 >"$WORK/filter-e.out" 2>"$WORK/filter-e.err"
expect "full filter exits 0" test $? -eq 0
cat "$WORK/filter-e.out"
expect "compile stage ran on the kept tasks" \
  test "$(jq -s '[.[] | select(.filter.stages.compile.status == "pass")] | length' "$E/manifest.jsonl")" = \
       "$(jq -s '[.[] | select(.status == "kept")] | length' "$E/manifest.jsonl")"
nk=$(jq -s '[.[] | select(.status == "kept")] | length' "$E/manifest.jsonl")
expect "kept tasks were captured as bundles ($nk)" \
  test "$nk" -gt 0 -a "$(jq -s '[.[] | select(.bundle != null)] | length' "$E/manifest.jsonl")" = "$nk"
b=$(jq -r 'select(.bundle != null) | .bundle' "$E/manifest.jsonl" | head -1)
expect "a bundle is valid (kbsynth info)" "$KBSYNTH" info "$E/$b"
expect "the bundle's provenance says synth" test "$(jq -r .provenance.source "$E/$b/task.json")" = synth

# 6. Decontamination: a renamed copy is flagged, a different program kept.
DC="$ROOT/testdata/synth/decontam"
"$KBSYNTH" similarity "$DC/renamed_copy.py" "$DC/different.py" --reference "$REF" >"$WORK/sim.jsonl" 2>/dev/null
expect "similarity exits 1 when a program is flagged" test $? -eq 1
cat "$WORK/sim.jsonl"
expect "renamed copy: flagged, similarity 1.0, nearest 2_Linear_GELU_Scale" \
  test "$(jq -c 'select(.program | endswith("renamed_copy.py")) | [.flagged, .similarity, .nearest]' "$WORK/sim.jsonl")" = \
       '[true,1,"kernelbench/level1/2_Linear_GELU_Scale"]'
expect "different program: kept (similarity under 0.9)" \
  test "$(jq -c 'select(.program | endswith("different.py")) | [.flagged, (.similarity < 0.9)]' "$WORK/sim.jsonl")" = '[false,true]'
# The same through the filter: a run whose programs are the two files.
F="$WORK/f"
"$KBSYNTH" compose -n 2 --seed 1 --profile tiny -o "$F" >/dev/null 2>&1
cp "$DC/renamed_copy.py" "$F/programs/00000.py"; cp "$DC/different.py" "$F/programs/00001.py"
"$KBSYNTH" filter "$F" --stages parse,decontam --reference "$REF" >/dev/null 2>&1
expect "filter drops the renamed copy as contaminated, naming the problem" \
  test "$(jq -c 'select(.index == 0) | [.status, .filter.reason, .filter.stages.decontam.nearest]' "$F/manifest.jsonl")" = \
       '["dropped","contaminated","kernelbench/level1/2_Linear_GELU_Scale"]'
expect "filter keeps the different program" test "$(jq -r 'select(.index == 1) | .status' "$F/manifest.jsonl")" = kept

# 7. The GPU acceptance run's own programs (300, gpu profile, seed 1), checked
#    for structure on the meta device: they load and their output shapes are
#    the predicted ones (no data, so GB-sized tasks cost nothing here).
G="$WORK/g"
"$KBSYNTH" compose -n 300 --seed 1 -o "$G" >/dev/null 2>&1
"$KBSYNTH" filter "$G" --device meta --stages parse,eager -j "$J" >/dev/null 2>"$WORK/filter-g.err"
expect "gpu profile: 300 programs build and give the predicted shapes (meta device)" \
  test "$(jq -s '[.[] | select(.filter.stages.eager.status == "pass")] | length' "$G/manifest.jsonl")" = 300
expect "meta device refuses stages that need values (exit 2)" \
  test "$(exit_code "$KBSYNTH" filter "$G" --device meta --stages parse,eager,compile --force)" = 2

# 8. Workers that die or hang cost one task each; --time-limit stops a run
#    that the same command resumes.
FT="$ROOT/testdata/synth/filter"
H="$WORK/h"
"$KBSYNTH" compose -n 3 --seed 3 --profile tiny -o "$H" --mix 2:1 >/dev/null 2>&1
cp "$FT/crash.py" "$H/programs/00000.py"; cp "$FT/hang.py" "$H/programs/00001.py"
t0=$(date +%s)
"$KBSYNTH" filter "$H" --stages parse,eager,deterministic --task-timeout 2 -j 1 >/dev/null 2>"$WORK/filter-h.err"
expect "filter with a crashing and a hanging task exits 0" test $? -eq 0
hs=$(jq -r 'select(.id == "synth/s3/00001") | .seconds | floor' "$H/times.jsonl")
expect "the hanging task was killed 2 s after its limit of 2 s, not waited for (${hs} s; run $(( $(date +%s) - t0 )) s)" \
  test "${hs:-999}" -lt 15
expect "a task that kills its worker twice: dropped at eager (crash), its parse stage recorded" \
  test "$(jq -c 'select(.index == 0) | [.status, .filter.dropped_at, .filter.reason, .filter.stages.parse.status]' "$H/manifest.jsonl")" = \
       '["dropped","eager","crash","pass"]'
expect "a task that ignores the soft limit: dropped at eager (timeout)" \
  test "$(jq -c 'select(.index == 1) | [.status, .filter.dropped_at, .filter.reason]' "$H/manifest.jsonl")" = \
       '["dropped","eager","timeout"]'
expect "the task after them is filtered normally" test "$(jq -r 'select(.index == 2) | .status' "$H/manifest.jsonl")" = kept
I="$WORK/i"
"$KBSYNTH" compose -n 4 --seed 3 --profile tiny -o "$I" >/dev/null 2>&1
cp "$FT/slow.py" "$I/programs/00000.py"
"$KBSYNTH" filter "$I" --stages parse,eager --time-limit 3 -j 1 >/dev/null 2>"$WORK/filter-i1.err"
expect "--time-limit: exit 1" test $? -eq 1
expect "--time-limit: says how to resume" grep -q "stopped by --time-limit" "$WORK/filter-i1.err"
expect "--time-limit: the task in flight is not recorded" \
  test "$(jq -r 'select(.index == 0) | .filter' "$I/manifest.jsonl")" = null
"$KBSYNTH" filter "$I" --stages parse,eager -j 1 >/dev/null 2>"$WORK/filter-i2.err"
expect "the same command resumes and finishes (exit 0)" test $? -eq 0
expect "every task has a verdict after the resume" \
  test "$(jq -s '[.[] | select(.status == "composed")] | length' "$I/manifest.jsonl")" = 0

# 9. Bad input: exit 2 with one line.
expect "filter of a folder that is not a run: exit 2" test "$(exit_code "$KBSYNTH" filter "$WORK/nope")" = 2
expect "bad --mix: exit 2" test "$(exit_code "$KBSYNTH" compose -n 2 -o "$WORK/x" --mix 7:1)" = 2
expect "unknown stage: exit 2" test "$(exit_code "$KBSYNTH" filter "$A" --stages eager,frobnicate --force)" = 2
expect "bad profile: exit 2" test "$(exit_code "$KBSYNTH" compose -n 2 -o "$WORK/y" --profile huge)" = 2
msg=$("$KBSYNTH" filter "$WORK/nope" 2>&1 >/dev/null)
expect "one line on stderr ($msg)" test "$(echo "$msg" | wc -l)" = 1
expect "--help lists compose" sh -c "'$KBSYNTH' --help | grep -q 'kbsynth compose'"

echo "kbsynth_synth_test: $fails failure(s)"
[ "$fails" -eq 0 ]
