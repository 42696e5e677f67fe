#!/usr/bin/env bash
# Tool-level test of kbsynth on the sample problems (CPU):
#   import (KernelBench folders, bad programs, JSONL and Parquet rows, a
#   single model.py), the CPU compiled baseline, check (C++ reference and
#   compiled baseline vs Python outputs for three seeds), the lib/task unit
#   tests on the exported bundles, export, and the error exits.
# Usage: kbsynth_test.sh KBSYNTH TASK_TEST WORKDIR
set -uo pipefail
KBSYNTH="$1"; TASK_TEST="$2"; WORK="$3"
SRC="${KB_SOURCE_ROOT:?}/testdata/tasks-src"
PY="${KB_PYTHON:-/opt/kb-venv/bin/python3}"
source "$(dirname "${BASH_SOURCE[0]}")/../support/expect.sh"

rm -rf "$WORK"; mkdir -p "$WORK"
OUT="$WORK/tasks"

# 1. Import the samples and the bad programs; build the CPU compiled baseline.
"$KBSYNTH" import "$SRC/kernelbench" "$SRC/bad" -o "$OUT" -j 1 --compiled cpu --baseline-jobs 2 >"$WORK/import.jsonl" 2>"$WORK/import.err"
rc=$?
expect "import exits 0 (rc=$rc)" test $rc -eq 0
R="$OUT/import-report.json"
expect "import report: 12 tasks, 8 ok" test "$(jq '.summary.total' "$R"),$(jq '.summary.ok' "$R")" = "12,8"
expect "every captured task says it ran on the cpu" \
  test "$(jq '[.tasks[] | select(.status == "ok" and .device != "cpu")] | length' "$R")" = 0
expect "the first progress line names the capture device" grep -q "forwards on cpu" "$WORK/import.err"
for reason in syntax_error missing_function init_error non_tensor_output; do
  expect "import report counts $reason" test "$(jq ".summary.by_reason.$reason" "$R")" = 1
done
expect "every failure has a reason and a message" \
  test "$(jq '[.tasks[] | select(.status != "ok") | select((.reason // "") == "" or (.message // "") == "")] | length' "$R")" = 0
expect "failed bundles are removed" test ! -e "$OUT/bad/1_Syntax_Error"
expect "8 compiled cpu baselines" test "$(jq '.summary.compiled.ok' "$R")" = 8
expect "baselines built two at once, each with its own process" grep -q "baselines for cpu: .* 2 at once" "$WORK/import.err"
expect "baselines start while capture goes on" \
  test "$(grep -n "baselines for cpu" "$WORK/import.err" | cut -d: -f1)" -lt "$(grep -n "capture ended after" "$WORK/import.err" | cut -d: -f1)"
# The largest program is captured first (its baseline builds longest).
largest=$(find "$SRC/kernelbench" "$SRC/bad" -name '*.py' -printf '%s %f\n' | sort -rn | head -1 | awk '{print $2}')
expect "the largest program (${largest%.py}) is captured first" \
  bash -c "grep -m1 'kbsynth: \[1/12\]' '$WORK/import.err' | grep -q '/${largest%.py}: '"
expect "baseline progress counts the 8 captured, not the 12 tried" grep -q "kbsynth: baseline \[8/8\]" "$WORK/import.err"
expect "summary line on stderr" grep -q "imported 8 of 12 tasks; skipped 4" "$WORK/import.err"
expect "one JSON line per task on stdout" test "$(wc -l <"$WORK/import.jsonl")" = 12
expect "the float-bounds module fell back to trace" \
  test "$(jq -r '.capture' "$OUT/kernelbench/level2/2_Matmul_Hardtanh_FloatBounds/task.json")" = trace
expect "the scalar-input module uses a recorded spec" \
  test "$(jq -r '.generator' "$OUT/kernelbench/level1/4_Sum_Scalar_Dim/task.json")" = spec
expect "{-1, 1} float targets are recorded as a choice" \
  test "$(jq -c '.inputs[1] | [.distribution, .params.values]' "$OUT/kernelbench/level1/6_Hinge_Sign_Targets/task.json")" = '["choice",[-1,1]]'
expect "non-negative predictions stay non-negative (uniform)" \
  test "$(jq -r '.inputs[0] | .distribution' "$OUT/kernelbench/level1/6_Hinge_Sign_Targets/task.json")" = uniform
expect "import writes inputs_exhaustive explicitly false (domain draws on)" \
  test "$(jq -s 'map(.inputs_exhaustive) | unique' "$OUT"/kernelbench/level*/*/task.json | jq -c .)" = '[false]'

# 2. C++ reproduces Python for three seeds: inputs, reference, compiled baseline.
"$KBSYNTH" check "$OUT"/kernelbench/level*/* --device cpu --seeds 0,1,2 >"$WORK/check.jsonl" 2>"$WORK/check.err"
rc=$?
expect "check exits 0 (rc=$rc)" test $rc -eq 0
cat "$WORK/check.jsonl" | jq -c '{id, inputs_max_abs_diff, reference_max_abs_diff, compiled_max_abs_diff, status}'
expect "check: 8 bundles ok" test "$(jq -s '[.[] | select(.status == "ok")] | length' "$WORK/check.jsonl")" = 8
expect "check: all diffs under 1e-5" test "$(jq -s '[.[] | select(.reference_max_abs_diff > 1e-5 or .compiled_max_abs_diff > 1e-5 or .inputs_max_abs_diff > 0)] | length' "$WORK/check.jsonl")" = 0

# 3. The library tests on these bundles.
expect "task_test on the exported bundles" env KB_TASK_BUNDLES="$OUT" "$TASK_TEST"

# 4. Dataset rows (JSONL, Parquet) and a single model.py.
"$PY" - "$SRC" "$WORK/rows.jsonl" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
rows = [
    {"code": open(f"{src}/kernelbench/level1/1_ReLU_Scale.py").read(), "ops": ["torch.relu"], "data_source": "sample"},
    {"code": open(f"{src}/kernelbench/level1/5_MinMax_Tuple.py").read(), "ops": ["torch.amin", "torch.amax"], "data_source": "sample"},
    {"code": "import torch\nclass Model(torch.nn.Module):\n    pass\n", "ops": [], "data_source": "sample"},
    {"ops": ["no code"], "data_source": "sample"},
]
with open(out, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
"$KBSYNTH" import "$WORK/rows.jsonl" -o "$WORK/rows" --id-prefix ops6k >"$WORK/rows.out" 2>"$WORK/rows.err"
RR="$WORK/rows/import-report.json"
expect "jsonl: 2 of 4 rows imported" test "$(jq '.summary.ok' "$RR"),$(jq '.summary.total' "$RR")" = "2,4"
expect "jsonl: bad row reported" test "$(jq '.summary.by_reason.bad_row' "$RR")" = 1
expect "jsonl: program without get_inputs reported" test "$(jq '.summary.by_reason.missing_function' "$RR")" = 1
expect "jsonl: provenance keeps ops and data_source" \
  test "$(jq -c '.provenance | [.source, .row, .ops, .data_source]' "$WORK/rows/ops6k/00001/task.json")" = '["dataset",1,["torch.amin","torch.amax"],"sample"]'
if "$PY" -c "import pyarrow" 2>/dev/null; then
  "$PY" -c "
import json, sys, pyarrow as pa, pyarrow.parquet as pq
rows = [json.loads(l) for l in open('$WORK/rows.jsonl')][:2]
pq.write_table(pa.Table.from_pylist(rows), '$WORK/rows.parquet')"
  "$KBSYNTH" import "$WORK/rows.parquet" -o "$WORK/pq" >/dev/null 2>"$WORK/pq.err"
  expect "parquet: 2 rows imported as rows/00000, rows/00001" \
    test -f "$WORK/pq/rows/00000/task.json" -a -f "$WORK/pq/rows/00001/reference.pt"
else
  echo "skip - parquet (pyarrow not installed)"
fi
"$KBSYNTH" import "$SRC/kernelbench/level1/2_Linear_GELU_Scale.py" --id mine/gelu -o "$WORK/single" >/dev/null 2>&1
expect "single model.py imported under --id" test -f "$WORK/single/mine/gelu/task.json"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  msg=$("$KBSYNTH" import "$SRC/kernelbench/level1/2_Linear_GELU_Scale.py" -o "$WORK/nogpu" --capture-device cuda 2>&1 >/dev/null)
  rc=$?
  expect "--capture-device cuda without a GPU: exit 3, the machine's fault ($msg)" test $rc -eq 3
  expect "--capture-device cuda without a GPU: says so" sh -c "echo '$msg' | grep -q 'no NVIDIA GPU'"
  expect "--capture-device cuda without a GPU: nothing written" test ! -e "$WORK/nogpu/file"
  expect "--capture-device must name a device" test "$(exit_code "$KBSYNTH" export "$WORK/single/mine/gelu" --capture-device tpu)" = 2
fi

# 5. export re-captures a bundle and keeps its id, provenance and compiled package.
B="$OUT/kernelbench/level1/2_Linear_GELU_Scale"
"$KBSYNTH" export "$B" >/dev/null 2>"$WORK/export.err"
expect "export keeps the id" test "$(jq -r .id "$B/task.json")" = kernelbench/level1/2_Linear_GELU_Scale
expect "export keeps the compiled package of an unchanged model.py" test "$(jq -r '.compiled.cpu.weights' "$B/task.json")" = external
expect "info: bundle valid, cpu package usable" test "$("$KBSYNTH" info "$B" | jq -r '.compiled.cpu')" = ok
expect "baseline: cached the second time" test "$("$KBSYNTH" baseline "$B" --device cpu 2>/dev/null | jq -r .status)" = cached
# A build over $KB_BASELINE_TIMEOUT fails alone with reason timeout.
cp -r "$B" "$WORK/slow"
expect "baseline over its time limit: reason timeout" \
  test "$(KB_BASELINE_TIMEOUT=1 "$KBSYNTH" baseline "$WORK/slow" --device cpu --force 2>/dev/null | jq -r .reason)" = timeout
# A failed build is remembered (compiled/cpu.failed.json): the next run without
# --force reports it at once, unless it now has more time.
rm -f "$WORK/slow/compiled/cpu.pt2"
KB_BASELINE_TIMEOUT=1 "$KBSYNTH" baseline "$WORK/slow" --device cpu >/dev/null 2>&1
expect "the failure is recorded" test "$(jq -r .reason "$WORK/slow/compiled/cpu.failed.json")" = timeout
expect "a failure is remembered, not built again" \
  test "$(KB_BASELINE_TIMEOUT=1 "$KBSYNTH" baseline "$WORK/slow" --device cpu 2>/dev/null | jq -c '[.reason, .remembered]')" = '["timeout",true]'
expect "a timeout is built again with more time" \
  test "$(KB_BASELINE_TIMEOUT=2 "$KBSYNTH" baseline "$WORK/slow" --device cpu 2>/dev/null | jq -c '[.reason, .remembered]')" = '["timeout",null]'

# 5b. A baseline that runs the GPU out of memory beside the others is built
# again alone: two programs whose forward fails under torch.export with CUDA's
# out-of-memory message (two copies of testdata/baseline-oom/export_oom.py),
# two builds at once.
mkdir -p "$WORK/oom-src"
for n in 1 2; do cp "$KB_SOURCE_ROOT/testdata/baseline-oom/export_oom.py" "$WORK/oom-src/export_oom_$n.py"; done
"$KBSYNTH" import "$WORK/oom-src" -o "$WORK/oom" --compiled cpu --baseline-jobs 2 >"$WORK/oom.jsonl" 2>"$WORK/oom.err"
expect "out of memory: reason out_of_memory" test "$(jq -r '.compiled.reason' "$WORK/oom.jsonl" | sort -u)" = out_of_memory
expect "out of memory: built again alone" test "$(jq -r '.compiled.ran_alone' "$WORK/oom.jsonl" | sort -u)" = true
expect "out of memory: says it builds them again" grep -q "2 baseline(s) ran the GPU out of memory beside the others" "$WORK/oom.err"

# 5c. A build the alarm cannot reach (SIGALRM ignored under torch.export):
# its worker is killed 10 s after $KB_BASELINE_TIMEOUT (1 s here), the timeout recorded
# for the next run.
mkdir -p "$WORK/stall-src"
cp "$KB_SOURCE_ROOT/testdata/baseline-stall/export_stall.py" "$WORK/stall-src/"
"$KBSYNTH" import "$WORK/stall-src" -o "$WORK/stall" >/dev/null 2>&1
S="$WORK/stall/stall-src/export_stall"
KB_BASELINE_TIMEOUT=1 "$KBSYNTH" baseline "$S" --device cpu >"$WORK/stall.jsonl" 2>"$WORK/stall.err"
expect "a worker the alarm cannot reach: killed, reason timeout" \
  test "$(jq -c '[.reason, (.message | test("its worker was killed"))]' "$WORK/stall.jsonl")" = '["timeout",true]'
expect "the killed build is recorded for the next run" \
  test "$(jq -r .reason "$S/compiled/cpu.failed.json" 2>/dev/null)" = timeout
expect "and remembered by it" \
  test "$(KB_BASELINE_TIMEOUT=1 "$KBSYNTH" baseline "$S" --device cpu 2>/dev/null | jq -r .remembered)" = true

# 6. Bad input: exit 2 with one line.
C="$WORK/corrupt"; cp -r "$OUT/kernelbench/level1/1_ReLU_Scale" "$C"
printf 'garbage' >>"$C/reference.pt"
expect "corrupt reference.pt: exit 2" test "$(exit_code "$KBSYNTH" info "$C")" = 2
msg=$("$KBSYNTH" info "$C" 2>&1 >/dev/null)
expect "corrupt reference.pt: one line naming the file ($msg)" test "$(echo "$msg" | wc -l)" = 1 -a -n "$(echo "$msg" | grep 'reference.pt: corrupt')"
V="$WORK/version"; cp -r "$OUT/kernelbench/level1/1_ReLU_Scale" "$V"
jq '.format_version = 7' "$V/task.json" >"$V/t" && mv "$V/t" "$V/task.json"
expect "version mismatch: exit 2" test "$(exit_code "$KBSYNTH" check "$V")" = 2
expect "missing bundle: exit 2" test "$(exit_code "$KBSYNTH" info "$WORK/nope")" = 2
expect "unknown flag: exit 2" test "$(exit_code "$KBSYNTH" import --frobnicate)" = 2
expect "bad seeds: exit 2" test "$(exit_code "$KBSYNTH" check "$B" --seeds 1,x)" = 2
expect "bad device: exit 2" test "$(exit_code "$KBSYNTH" baseline "$B" --device tpu)" = 2
expect "import of nothing usable: exit 2" test "$(exit_code "$KBSYNTH" import "$WORK/import.err" -o "$WORK/x")" = 2
# A capture over its time limit is reported as reason "timeout" (not as the
# forward_error its forward's own exception handling used to make of it).
mkdir -p "$WORK/slow"
cat >"$WORK/slow/1_Slow.py" <<'PY'
import time
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        time.sleep(30)
        return x * 2
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
PY
KB_CAPTURE_TIMEOUT=2 "$KBSYNTH" import "$WORK/slow/1_Slow.py" -o "$WORK/slow-out" >/dev/null 2>&1
expect "capture over its limit: reason timeout" \
  test "$(jq -r '.tasks[0].reason' "$WORK/slow-out/import-report.json" 2>/dev/null)" = timeout
# The capture pool: a task that crashes its worker, one over the memory
# budget and one stuck in a C call that ignores the alarm each fail alone,
# with their own reason; their worker is replaced and the last task is
# captured. One worker, so that each failure is followed by a replacement.
mkdir -p "$WORK/pool"
prog() {  # prog NAME FORWARD_BODY
  cat >"$WORK/pool/$1.py" <<PY
import ctypes, os, signal, torch
class Model(torch.nn.Module):
    def forward(self, x):
$2
        return x * 2
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
PY
}
prog 1_Crash "        os.kill(os.getpid(), signal.SIGSEGV)"
prog 2_Hog "        self.keep = torch.ones(512, 1024, 1024)  # 2 GiB, touched"
prog 3_Stuck "        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM]); ctypes.CDLL(None).sleep(60)"
prog 4_Fine "        pass"
"$KBSYNTH" import "$WORK/pool" -o "$WORK/pool-out" -j 1 --memory-budget 1.5 --timeout 3 >/dev/null 2>"$WORK/pool.err"
PR="$WORK/pool-out/import-report.json"
reasons=$(jq -r '[.tasks | sort_by(.id)[] | (.status + ":" + (.reason // ""))] | join(",")' "$PR" 2>/dev/null)
expect "pool: crash, out_of_memory, timeout fail alone; the next task is ok ($reasons)" \
  test "$reasons" = "failed:crash,failed:out_of_memory,failed:timeout,ok:"
expect "pool: progress lines carry a rate and the time left" grep -q "tasks/s, about .* left" "$WORK/pool.err"
expect "pool: the stuck task's worker was killed by the pool" \
  sh -c "jq -r '.tasks[] | select(.id == \"pool/3_Stuck\") | .message' '$PR' | grep -q 'ignored the capture.s alarm'"
expect "pool: funnel by level absent without levels, by reason present" \
  test "$(jq -c '.summary.by_reason' "$PR")" = '{"crash":1,"out_of_memory":1,"timeout":1}'
expect "import report: by_level funnel" \
  test "$(jq -c '.summary.by_level | [.level1.ok, .level1.failed, .level2.ok, .level2.failed]' "$R")" = "[6,0,2,0]"
# Two tasks that fit the budget alone but not together: the larger is handed
# back and runs again alone; both are captured.
mkdir -p "$WORK/pair"
for n in 1_MediumA 2_MediumB; do
  cat >"$WORK/pair/$n.py" <<'PY'
import time, torch
class Model(torch.nn.Module):
    def forward(self, x):
        keep = torch.ones(200, 1024, 1024)  # 0.78 GiB, touched
        time.sleep(1)
        return x * 2 + keep[0, 0, 0]
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
PY
done
"$KBSYNTH" import "$WORK/pair" -o "$WORK/pair-out" -j 2 --memory-budget 2.4 --timeout 120 >/dev/null 2>&1
PP="$WORK/pair-out/import-report.json"
expect "pool: two tasks over the budget together are both captured, one of them alone" \
  test "$(jq -c '[([.tasks[].status] | unique), ([.tasks[] | select(.ran_alone == true)] | length)]' "$PP")" = '[["ok"],1]'
# KernelBench level-3 shapes that capture used to fail (33_VanillaRNN,
# 35_LSTM, 44_MiniGPTBlock, 46/47_NetVlad): an unannotated optional argument
# (script accepts it, its module cannot be saved: trace instead), a trace that
# records the device (it must follow the inputs' device), a lambda attribute
# over submodules (a deep copy would call the original's weights), a random
# draw too small to change a verdict (kept, with a note).
mkdir -p "$WORK/shapes/level3"
cat >"$WORK/shapes/level3/1_OptionalState.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x, h=None):
        if h is None:
            h = torch.zeros(x.shape, device=x.device)
        return torch.tanh(self.lin(x) + h.to(x.device))
def get_inputs():
    return [torch.randn(4, 8), torch.randn(4, 8)]
def get_init_inputs():
    return []
PY
cat >"$WORK/shapes/level3/2_LambdaMlp.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = torch.nn.ModuleDict(dict(fc=torch.nn.Linear(8, 16), proj=torch.nn.Linear(16, 8)))
        m = self.mlp
        self.mlpf = lambda x: m.proj(torch.relu(m.fc(x)))
    def forward(self, x):
        return x + self.mlpf(x)
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
PY
cat >"$WORK/shapes/level3/3_TinyNoise.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2 + 1e-6 * torch.randn(x.shape, device=x.device)
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
PY
# And one that scripts as it did: a ModuleList and a ModuleDict have no code
# of their own to print.
cat >"$WORK/shapes/level3/4_ModuleList.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(2)])
        self.acts = torch.nn.ModuleDict({"relu": torch.nn.ReLU()})
    def forward(self, x):
        for layer in self.layers:
            x = self.acts["relu"](layer(x))
        return x
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
PY
"$KBSYNTH" import "$WORK/shapes/level3" -o "$WORK/shapes-out" -j 1 >/dev/null 2>"$WORK/shapes.err"
SR="$WORK/shapes-out/import-report.json"
expect "level-3 shapes: all four captured" \
  test "$(jq -c '[.tasks[].status] | unique' "$SR" 2>/dev/null)" = '["ok"]'
ST="$WORK/shapes-out/kernelbench/level3"
expect "optional argument: traced, its unsaveable script noted" \
  sh -c "jq -e '.capture == \"trace\" and (.capture_notes | any(test(\"cannot be saved\")))' '$ST/1_OptionalState/task.json' >/dev/null"
expect "the trace's device follows the inputs (prim.device in the saved code)" \
  sh -c "'$PY' -c \"import torch; m = torch.jit.load('$ST/1_OptionalState/reference.pt'); assert 'prim.device(x)' in m.code and 'torch.device(\\\"cpu\\\")' not in m.code, m.code\""
expect "lambda over submodules: the reference uses its own weights" \
  sh -c "'$PY' -c \"import torch; m = torch.jit.load('$ST/2_LambdaMlp/reference.pt'); assert len(list(m.parameters())) == 4\""
expect "ModuleList and ModuleDict: scripted" test "$(jq -r .capture "$ST/4_ModuleList/task.json" 2>/dev/null)" = script
expect "a draw below the tolerance: kept, with a note" \
  sh -c "jq -e '.capture_notes | any(test(\"not bitwise\"))' '$ST/3_TinyNoise/task.json' >/dev/null"
expect "--help teaches" sh -c "'$KBSYNTH' --help | grep -q 'kbsynth import'"
expect "import --help" sh -c "'$KBSYNTH' import --help | grep -q 'CUDA-Agent-Ops-6K'"

echo "kbsynth_test: $fails failure(s)"
[ "$fails" -eq 0 ]
