#!/usr/bin/env bash
# Issue 20: scripts/capture.py with its forwards on the GPU
# (KB_CAPTURE_DEVICE=cuda) against the CPU, on KernelBench problems, without
# a build. Prints per task the result and seconds on each device and whether
# the two task.json agree (generator, capture method, the inputs' form,
# outputs, state); the weights differ when the GPU drew them (init.device),
# so the GPU's reference is given the CPU's weights and run beside the
# CPU's on the same CPU inputs.
# Usage: bash scripts/gpu/validate-capture.sh OUT PROBLEM...
#   PROBLEM is a path under $KB_KERNELBENCH (default ../shared/kernelbench),
#   e.g. level1/19_ReLU.py. KB_COMPARE_CPU=N: the first N problems are also
#   captured on the CPU (default 3), at the same time as the GPU's run.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KB="${KB_KERNELBENCH:-$ROOT/../shared/kernelbench}"
OUT="$1"; shift
NCPU="${KB_COMPARE_CPU:-3}"
PY="${KB_PYTHON:-python3}"
mkdir -p "$OUT"
: >"$OUT/jobs-cuda.jsonl"; : >"$OUT/jobs-cpu.jsonl"
i=0
for p in "$@"; do
  id="kernelbench/${p%.py}"
  for dev in cuda cpu; do
    [ "$dev" = cpu ] && [ "$i" -ge "$NCPU" ] && continue
    d="$OUT/$dev/$id"; mkdir -p "$d"; cp "$KB/$p" "$d/model.py"
    printf '{"dir": "%s", "id": "%s"}\n' "$d" "$id" >>"$OUT/jobs-$dev.jsonl"
  done
  i=$((i + 1))
done
start=$(date +%s)
KB_CAPTURE_DEVICE=cpu "$PY" "$ROOT/scripts/capture.py" "$OUT/jobs-cpu.jsonl" --threads 8 >"$OUT/cpu.jsonl" 2>"$OUT/cpu.err" &
cpu_pid=$!
KB_CAPTURE_DEVICE=cuda "$PY" "$ROOT/scripts/capture.py" "$OUT/jobs-cuda.jsonl" --threads 8 >"$OUT/cuda.jsonl" 2>"$OUT/cuda.err"
echo "cuda capture of $# tasks: $(( $(date +%s) - start )) s wall (one process, Python start included)"
wait $cpu_pid || true
"$PY" - "$OUT" <<'PY'
import json, os, sys
import torch
out = sys.argv[1]
def lines(dev):
    p = os.path.join(out, dev + ".jsonl")
    return {r["id"]: r for r in map(json.loads, open(p)) if "id" in r}
cuda, cpu = lines("cuda"), lines("cpu")
secs = [r["seconds"] for r in cuda.values()]
print(f"{'task':52} {'cuda':>22} {'s':>6} {'cpu':>8} {'s':>6}  same bundle")
for tid, r in cuda.items():
    c = cpu.get(tid)
    st = r["status"] if r["status"] == "ok" else r["status"] + ":" + r.get("reason", "")
    st += "" if r.get("device", "cuda") .startswith("cuda") or r["status"] != "ok" else "(on cpu)"
    same = ""
    if c and c["status"] == "ok" and r["status"] == "ok":
        a = json.load(open(os.path.join(out, "cuda", tid, "task.json")))
        b = json.load(open(os.path.join(out, "cpu", tid, "task.json")))
        keys = ["generator", "capture", "reference_args", "outputs", "state"]
        diff = [k for k in keys if a.get(k) != b.get(k)]
        # Input specs: the same form (observed statistics differ with the generator).
        form = lambda t: [{k: v for k, v in i.items() if k in ("kind", "dtype", "shape", "distribution")}
                          for i in t.get("inputs", [])]
        if form(a) != form(b):
            diff.append("inputs")
        # Weights drawn on the GPU differ from the CPU's by design (init.device):
        # the GPU's reference given the CPU's weights must compute what the
        # CPU's reference does, on the same CPU inputs.
        ra = torch.jit.load(os.path.join(out, "cuda", tid, "reference.pt"))
        rb = torch.jit.load(os.path.join(out, "cpu", tid, "reference.pt"))
        sa = dict(ra.state_dict()); sb = dict(rb.state_dict())
        wsame = sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
        init = a.get("init", {}).get("device", "cpu")
        same = "yes" if not diff else "differs in " + ",".join(diff)
        same += "; weights equal" if wsame else f"; weights drawn on {init}"
        if sa.keys() == sb.keys():
            with torch.no_grad():
                for k in sa:
                    sa[k].copy_(sb[k])
                torch.manual_seed(0)
                if b.get("generator") == "scripted":
                    xs = list(torch.jit.load(os.path.join(out, "cpu", tid, "inputs.pt"))())
                else:
                    xs = [torch.rand(i["shape"]).to(getattr(torch, i["dtype"])) if i["kind"] == "tensor"
                          else i["value"] for i in b.get("inputs", [])]
            if xs is not None:
                try:
                    ya, yb = ra(*xs), rb(*xs)
                    ya = ya if isinstance(ya, (list, tuple)) else [ya]
                    yb = yb if isinstance(yb, (list, tuple)) else [yb]
                    ok = all(torch.allclose(p, q, atol=1e-5, rtol=1e-5) for p, q in zip(ya, yb))
                    same += "; same outputs with the CPU's weights" if ok else "; OUTPUTS DIFFER"
                except Exception as e:  # noqa: BLE001
                    same += "; outputs not compared: " + str(e)[:80]
    print(f"{tid:52} {st:>22} {r['seconds']:6.1f} {(c['status'] if c else '-'):>8} {(c['seconds'] if c else 0):6.1f}  {same}")
    if r["status"] != "ok":
        print("    " + r.get("message", "")[:300])
    for n in r.get("notes", []):
        if "on the CPU" in n:
            print("    note: " + n[:300])
print(f"cuda: {sum(r['status'] == 'ok' for r in cuda.values())} of {len(cuda)} ok, "
      f"{sum(secs):.1f} s of captures, mean {sum(secs) / max(len(secs), 1):.1f} s per task")
PY
