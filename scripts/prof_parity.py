"""PyTorch's own view of a task's timings, for kbprof's parity check
(issue 5): for each task bundle, model(*x), torch.compile(model)(*x) and
the bundle's own AOTInductor package (compiled/sm_XY.pt2, what kbprof times
as its compile baseline; "aoti" below, when the bundle has one) timed the way
kbprof times them -- warm-up, then calls interleaved
eager/compiled, L2 flushed (a buffer of twice the L2 zeroed) before each,
torch.cuda.Event around each call on the current stream -- and the median
per participant. One JSON line per task on stdout.

    python scripts/prof_parity.py TASK_DIR... [--calls 100] [--warmup 3]
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

import torch


def load_model(task_dir):
    spec = importlib.util.spec_from_file_location("model", f"{task_dir}/model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    info = json.load(open(f"{task_dir}/task.json"))
    torch.manual_seed(info.get("init_seed", 42))
    # In the mode the task leaves it (KernelBench never calls .eval(); a
    # BatchNorm task in training mode normalises with batch statistics), as
    # the captured reference.pt is.
    model = mod.Model(*mod.get_init_inputs()).cuda()
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    return info.get("id", task_dir), model, inputs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 32 << 20) // 4, dtype=torch.int32, device="cuda")
    for task_dir in a.tasks:
        try:
            tid, model, x = load_model(task_dir)
            compiled = torch.compile(model)
            fns = {"eager": model, "compile": compiled}
            major, minor = torch.cuda.get_device_capability()
            pkg = f"{task_dir}/compiled/sm_{major}{minor}.pt2"
            if os.path.exists(pkg):
                runner = torch._inductor.aoti_load_package(pkg)
                fqns = runner.get_constant_fqns()
                if fqns:  # weights kept out of the package: supply the module's
                    state = dict(model.state_dict())
                    runner.load_constants({n: state[n] for n in fqns}, check_full_update=True)
                tensors = [t for t in x if isinstance(t, torch.Tensor)]
                fns["aoti"] = lambda *_: runner(*tensors)
            times = {k: [] for k in fns}
            with torch.no_grad():
                for _ in range(a.warmup):
                    for f in fns.values():
                        f(*x)
                torch.cuda.synchronize()
                for i in range(a.calls):
                    keys = list(fns)
                    order = keys[i % len(keys):] + keys[:i % len(keys)]
                    for k in order:
                        flush.zero_()
                        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        s.record()
                        fns[k](*x)
                        e.record()
                        torch.cuda.synchronize()
                        times[k].append(s.elapsed_time(e))
            print(json.dumps({"task": task_dir, "id": tid,
                              "eager_median_ms": statistics.median(times["eager"]),
                              "compile_median_ms": statistics.median(times["compile"]),
                              "aoti_median_ms": statistics.median(times["aoti"]) if times.get("aoti") else None,
                              "calls": a.calls}), flush=True)
        except Exception as ex:  # one bad task does not end the run
            print(json.dumps({"task": task_dir, "error": f"{type(ex).__name__}: {ex}"[:300]}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
