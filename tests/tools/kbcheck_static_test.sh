#!/usr/bin/env bash
# kbcheck static as a user runs it: exit codes, the JSON report's fields,
# SARIF 2.1.0's required fields, and clear errors for bad input.
# Usage: kbcheck_static_test.sh KBCHECK SOURCE_ROOT
set -uo pipefail
KBCHECK="$1"
ROOT="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
check() {  # check NAME EXPECTED_RC ACTUAL_RC
  if [ "$2" != "$3" ]; then echo "FAIL: $1: exit $3, expected $2"; fails=$((fails + 1)); else echo "ok: $1"; fi
}
assert_jq() {  # assert_jq NAME FILE FILTER (must print true)
  if [ "$(jq -r "$3" "$2" 2>/dev/null)" != "true" ]; then echo "FAIL: $1: $3"; fails=$((fails + 1)); else echo "ok: $1"; fi
}

# A clean solution: exit 0, full report.
"$KBCHECK" static "$ROOT/testdata/solutions/gemm_bias_relu" --json "$TMP/ok.json" 2>"$TMP/ok.err"
check "clean solution exits 0" 0 $?
assert_jq "report header" "$TMP/ok.json" \
  '.tool == "kbcheck" and .stage == "static" and .status == "ok" and (.solution_hash | startswith("sha256:")) and (.version | type == "string") and (.started_at | type == "string") and (.finished_at | type == "string") and has("gpu") and has("driver") and has("torch_version") and has("task_id")'
assert_jq "inventory kernels" "$TMP/ok.json" '[.inventory.kernels[].name] == ["bias_relu_vec4", "bias_relu_scalar"]'
assert_jq "inventory launch config" "$TMP/ok.json" '.inventory.launches[0].stream == "stream" and .inventory.launches[0].block == "threads"'
assert_jq "inventory library call" "$TMP/ok.json" '[.inventory.library_calls[] | .library + ":" + .function] == ["cublas:cublasSgemm_v2"]'
assert_jq "policy recorded" "$TMP/ok.json" '.policy.name == "paper-default" and (.policy.hash | startswith("sha256:"))'

# A task directory names the report.
mkdir -p "$TMP/task" && echo '{"id": "level1/19_ReLU"}' > "$TMP/task/task.json"
"$KBCHECK" static "$TMP/task" "$ROOT/testdata/solutions/vec_gelu" --json "$TMP/task.json" 2>/dev/null
check "task + solution exits 0" 0 $?
assert_jq "task id from task.json" "$TMP/task.json" '.task_id == "level1/19_ReLU"'

# Violations: exit 1, clang-style diagnostics, SARIF.
"$KBCHECK" static "$ROOT/tests/analyze/cases/process" --json "$TMP/bad.json" --sarif "$TMP/bad.sarif" 2>"$TMP/bad.err"
check "violations exit 1" 1 $?
if grep -qE '^.*/forward\.cpp:[0-9]+:[0-9]+: error: \[process\] ' "$TMP/bad.err"; then echo "ok: clang-style diagnostic"; else echo "FAIL: clang-style diagnostic"; cat "$TMP/bad.err"; fails=$((fails + 1)); fi
assert_jq "status static_violation" "$TMP/bad.json" '.status == "static_violation" and .counts.error > 0 and (.findings[0] | has("rule") and has("line") and has("column") and has("source_line"))'
# SARIF 2.1.0: the schema's required properties at every level we emit.
assert_jq "sarif log" "$TMP/bad.sarif" '.version == "2.1.0" and (.runs | type == "array" and length == 1)'
assert_jq "sarif tool" "$TMP/bad.sarif" '.runs[0].tool.driver.name == "kbcheck" and (.runs[0].tool.driver.rules | all(has("id") and (.shortDescription.text | type == "string")))'
assert_jq "sarif results" "$TMP/bad.sarif" '.runs[0].results | length > 0 and all(.message.text | type == "string") and all(.ruleId | type == "string") and all(.level | IN("none", "note", "warning", "error"))'
assert_jq "sarif locations" "$TMP/bad.sarif" '[.runs[0].results[].locations[0].physicalLocation] | all(.artifactLocation.uri | type == "string") and all(.region.startLine >= 1 and .region.startColumn >= 1)'
"$KBCHECK" static "$ROOT/tests/analyze/cases/process" --sarif - >"$TMP/stdout.sarif" 2>/dev/null
jq -e '.runs[0].results | length > 0' "$TMP/stdout.sarif" >/dev/null
check "sarif to stdout" 0 $?

# Sources that do not parse: a parser limit (nvcc may accept them; the build
# decides): status ok, exit 0, a parser-limit note, Clang's text kept.
mkdir -p "$TMP/broken" && printf '#include <kb/solution.h>\nKB_FORWARD(ctx) { int x = ; }\n' > "$TMP/broken/forward.cpp"
"$KBCHECK" static "$TMP/broken" --json "$TMP/broken.json" 2>/dev/null
check "unparsable source exits 0" 0 $?
assert_jq "parser-limit note with clang's message" "$TMP/broken.json" '.status == "ok" and (.compile_errors[0] | contains("expected expression")) and ([.findings[] | select(.rule == "parser-limit" and .severity == "note")] | length == 1) and .counts.error == 0'

# ... but a parse error hides nothing: a banned name in a declaration Clang
# rejected is still found by the token scan.
mkdir -p "$TMP/hidden" && printf '#include <kb/solution.h>\nextern "C" void* dlsym(void*, const char*);\nstatic void f( { dlsym(nullptr, "x"); }\nKB_FORWARD(ctx) {}\n' > "$TMP/hidden/forward.cpp"
"$KBCHECK" static "$TMP/hidden" --json "$TMP/hidden.json" 2>/dev/null
check "banned name inside a parse error exits 1" 1 $?
assert_jq "token scan finds dlsym" "$TMP/hidden.json" '.status == "static_violation" and ([.findings[] | select(.rule == "dynamic-loading" and .line == 3)] | length == 1)'

# Bad input: exit 2 with a one-line reason, never a crash.
bad_input() {  # bad_input NAME EXPECTED_TEXT ARGS...
  local name="$1" text="$2"; shift 2
  "$KBCHECK" static "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  check "$name exits 2" 2 $rc
  if grep -q "$text" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -le 2 ]; then echo "ok: $name message"; else echo "FAIL: $name message:"; cat "$TMP/err"; fails=$((fails + 1)); fi
}
bad_input "missing directory" "not found" "$TMP/nope"
mkdir -p "$TMP/noforward" && echo "int x;" > "$TMP/noforward/k.cu"
bad_input "no forward.cpp" "no forward.cpp" "$TMP/noforward"
mkdir -p "$TMP/binary" && printf 'int x;\0\1\2' > "$TMP/binary/forward.cpp"
bad_input "binary source" "binary file" "$TMP/binary"
mkdir -p "$TMP/huge" && head -c 2000000 /dev/zero | tr '\0' 'x' > "$TMP/huge/forward.cpp"
bad_input "oversized source" "over the limit" "$TMP/huge"
echo "int" > "$TMP/file.txt"
bad_input "file instead of directory" "not a directory" "$TMP/file.txt"
echo "{" > "$TMP/policy.json"
bad_input "broken policy" "invalid JSON" "$ROOT/testdata/solutions/vec_gelu" --policy "$TMP/policy.json"
"$KBCHECK" static >/dev/null 2>&1
check "no arguments exits 2" 2 $?
"$KBCHECK" static --help | grep -q "Exit status"
check "--help teaches" 0 $?

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
