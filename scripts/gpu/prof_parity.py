"""PyTorch's own view of a task's timings, for kbprof's parity check
(issue 5): for each task bundle, model(*x), torch.compile(model)(*x) and
the bundle's own AOTInductor package (compiled/sm_XY.pt2, what kbprof times
as its compile baseline; "aoti" below, when the bundle has one) timed the way
kbprof times them -- warm-up, then calls interleaved
eager/compiled, L2 flushed (a buffer of twice the L2 zeroed) before each,
torch.cuda.Event around each call on the current stream -- and the median
per participant. Each participant is timed two ways, alternating call by
call: plain (flush, event, call, event: the host's launch latency after the
flush lands in the event time) and with kbprof's head start (a spin of
--head-start-us queued after the flush, torch.cuda._sleep, so the events
see the GPU work only): the "*_hs_median_ms" fields. One JSON line per task
on stdout.

    python scripts/gpu/prof_parity.py TASK_DIR... [--calls 100] [--warmup 3] [--head-start-us 200]
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

import torch

# kbprof times its baselines in full float32 (task::useFullFloat32): TF32 off.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False


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


def head_start_cycles(us):
    """The spin kernel's cycles for `us` microseconds: a known spin timed
    with events, the fastest of three after one warm-up (as kbprof does)."""
    probe, best = 4 << 20, None
    for i in range(4):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.cuda._sleep(probe)
        e.record()
        torch.cuda.synchronize()
        if i > 0:
            ms = s.elapsed_time(e)
            best = ms if best is None else min(best, ms)
    return int(probe * us / (best * 1e3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--head-start-us", type=float, default=200.0)
    a = ap.parse_args()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 32 << 20) // 4, dtype=torch.int32, device="cuda")
    cycles = head_start_cycles(a.head_start_us)
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
            times = {k + m: [] for k in fns for m in ("", "_hs")}
            with torch.no_grad():
                for _ in range(a.warmup):
                    for f in fns.values():
                        f(*x)
                torch.cuda.synchronize()
                for i in range(a.calls):
                    keys = list(fns)
                    order = keys[i % len(keys):] + keys[:i % len(keys)]
                    modes = ("", "_hs") if i % 2 == 0 else ("_hs", "")
                    for k in order:
                        for m in modes:
                            flush.zero_()
                            if m:
                                torch.cuda._sleep(cycles)
                            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            s.record()
                            fns[k](*x)
                            e.record()
                            torch.cuda.synchronize()
                            times[k + m].append(s.elapsed_time(e))
            row = {"task": task_dir, "id": tid, "calls": a.calls, "head_start_us": a.head_start_us}
            for k in ("eager", "compile", "aoti"):
                for m in ("", "_hs"):
                    row[f"{k}{m}_median_ms"] = statistics.median(times[k + m]) if times.get(k + m) else None
            print(json.dumps(row), flush=True)
        except Exception as ex:  # one bad task does not end the run
            print(json.dumps({"task": task_dir, "error": f"{type(ex).__name__}: {ex}"[:300]}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
