#!/usr/bin/env python3
"""Execution filters and decontamination of composed tasks, run by
`kbsynth filter` (tools/kbsynth, lib/synth/pipeline.cpp), not by hand:

    synth_filter.py --jobs JOBS.jsonl|- --device cpu|cuda[:N] --stages S1,S2,...
                    [--reference DIR ...] [--max-similarity 0.9]
                    [--min-ms 1] [--max-ms 100] [--init-seed 42]
                    [--timeout S] [--threads N] [--gpu-lock DIR]

A long-lived worker: with `--jobs -` it reads one job per line from stdin as
the driver sends them and exits at end of input, so one process (one
`import torch`, one CUDA context) serves many tasks. Each job is {"id",
"program": path of model.py, "expect": {"shape": [...], "dtype": "float32"}
(may be absent), "stages": [...] (may be absent: --stages)}. On stdout:

    {"hello": {"pid", "torch", "device", "startup_s"}}         once, when ready
    {"id": ..., "stage": S, "result": {"status": "pass", ...}}  after each stage
    {"id": ..., "stages": {"eager": {"status": "pass", ...}, ...},
     "verdict": "kept"|"dropped", "dropped_at": stage|null, "reason": ..., "seconds": 1.2}

The per-stage lines let the driver record what a task got through before a
hard timeout or a crash; the last line is the task's result. After a CUDA
error that poisons the process's context the worker reports the task and
exits (status 4) so that the driver starts a fresh one.

Stages, in the order given (a task stops at its first failed stage; the
later ones are "not_run"):
  parse          model.py parses
  eager          it loads, builds and runs under eager PyTorch on --device; the
                 output matches the composer's predicted shape and dtype
  deterministic  a second model built with the same init seed, on the same
                 inputs, gives the same output (atol = rtol = 1e-5; "bitwise"
                 says whether it was exactly equal)
  nondegenerate  the output is finite, not constant, and differs for the
                 inputs of seed 1
  decontam       Python-AST similarity (synth_ast.py) to every reference
                 program at most --max-similarity; the nearest is named
  timing         eager forward time (CUDA events, median of up to 10 calls
                 after 3 warm-up calls, at least 3 and about 0.5 s of calls) in
                 [--min-ms, --max-ms]; "skipped" (not passed) without a CUDA device
  compile        torch.compile(model) runs and matches eager within 1e-2
The stages of one task share its model, inputs and eager output, so a task
is built once per process. Models and inputs are made directly on --device
(torch.device as the default device), so the values on CUDA differ from the
CPU's; every stage compares like with like on one device, and comparisons
run on the device.

--gpu-lock DIR: several workers share one GPU. Their GPU work (eager,
deterministic, nondegenerate) holds a shared lock and the timed calls an
exclusive one (fcntl locks on DIR/turn.lock and DIR/gpu.lock, a waiting timer
goes first), so no other worker's kernels run while a forward is timed.
Reasons are listed in docs/kbsynth-synthesis.md. Python is needed here
because the tasks are PyTorch programs.
"""

import argparse
import contextlib
import fcntl
import gc
import importlib
import json
import math
import os
import signal
import sys
import time

_T0 = time.time()
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbtask  # noqa: E402
from kbtask import TaskError, torch  # noqa: E402
import synth_ast  # noqa: E402

ALL_STAGES = ["parse", "eager", "deterministic", "nondegenerate", "decontam", "timing", "compile"]
TIMEOUT_S = int(os.environ.get("KB_SYNTH_TASK_TIMEOUT", "600"))
# Messages after which a process's CUDA context cannot be trusted any more.
_CUDA_POISON = ("CUDA error", "illegal memory access", "device-side assert", "CUBLAS_STATUS", "cuDNN error",
                "unspecified launch failure")


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


class Fail(Exception):
    def __init__(self, reason, message, **extra):
        super().__init__(message)
        self.reason, self.message, self.extra = reason, message, extra


def _is_oom(e):
    return isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()


def _run(model, xs, where):
    try:
        with torch.no_grad():
            out = model(*xs)
    except Exception as e:  # noqa: BLE001
        if _is_oom(e):
            raise Fail("out_of_memory", where + ": " + kbtask.one_line(e))
        raise Fail("forward_error", where + ": " + kbtask.one_line(e))
    try:
        return kbtask.flatten_outputs(out, where)
    except TaskError as e:
        raise Fail(e.kind, e.message)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class GpuLock:
    """A readers-writer lock between the worker processes of one GPU, made of
    two fcntl (flock) locks: readers take `turn` exclusively for a moment and
    then `gpu` shared; the timer takes `turn` and then `gpu` exclusively, so
    once it waits no new reader gets in (writer preference). The kernel drops
    the locks of a process that dies."""

    def __init__(self, folder, device):
        self.device = device
        self.turn = open(os.path.join(folder, "turn.lock"), "a+") if folder else None
        self.gpu = open(os.path.join(folder, "gpu.lock"), "a+") if folder else None

    @contextlib.contextmanager
    def shared(self):
        if self.gpu is None:
            yield
            return
        fcntl.flock(self.turn, fcntl.LOCK_EX)
        fcntl.flock(self.gpu, fcntl.LOCK_SH)
        fcntl.flock(self.turn, fcntl.LOCK_UN)
        try:
            yield
        finally:
            try:
                _sync(self.device)  # none of this worker's kernels may run on into a timed region
            finally:
                fcntl.flock(self.gpu, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self):
        if self.gpu is None:
            yield
            return
        fcntl.flock(self.turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.gpu, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self.gpu, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self.turn, fcntl.LOCK_UN)


class Task:
    """State shared by the stages of one task."""

    def __init__(self, job, device, init_seed):
        self.job, self.device, self.init_seed = job, device, init_seed
        self.mod = self.model = self.x0 = self.out0 = None


def st_parse(t, ctx):
    with open(t.job["program"], encoding="utf-8", errors="replace") as f:
        t.source = f.read()
    try:
        t.tokens = synth_ast.tokens(t.source)
    except SyntaxError as e:
        raise Fail("syntax_error", f"line {e.lineno}: {e.msg}")
    return {}


def _build(t):
    """Model(*get_init_inputs()) built directly on the device (torch.device as
    the default device: weights are drawn there, so GB-sized models do not go
    through host memory)."""
    args = kbtask.init_args(t.mod)
    try:
        with t.device:
            model = kbtask.build_model(t.mod, t.init_seed, args)
        return model.to(t.device)
    except TaskError as e:
        if _is_oom(Exception(e.message)):
            raise Fail("out_of_memory", e.message)
        raise
    except Exception as e:  # noqa: BLE001
        raise Fail("out_of_memory" if _is_oom(e) else "init_error", "model.to(device): " + kbtask.one_line(e))


def _inputs(t, seed):
    """get_inputs() after torch.manual_seed(seed), made on the device."""
    try:
        with t.device:
            xs = kbtask.python_inputs(t.mod, seed)
        return kbtask.to_device(xs, t.device)
    except TaskError:
        raise
    except Exception as e:  # noqa: BLE001
        raise Fail("out_of_memory" if _is_oom(e) else "inputs_error", kbtask.one_line(e))


def _eager(t):
    try:
        t.mod = kbtask.load_program(t.job["program"])
        t.model = _build(t)
        t.x0 = _inputs(t, 0)
    except TaskError as e:
        raise Fail(e.kind, e.message)
    t.out0 = _run(t.model, t.x0, "eager forward")
    _sync(t.device)


def st_eager(t, ctx):
    with ctx["lock"].shared():
        _eager(t)
    got = [{"shape": list(o.shape), "dtype": kbtask.DTYPE_NAMES.get(o.dtype, str(o.dtype))} for o in t.out0]
    want = t.job.get("expect")
    if want and (len(got) != 1 or got[0]["shape"] != want["shape"] or got[0]["dtype"] != want["dtype"]):
        raise Fail("shape_mismatch", f"output {got} but the composer predicted {want}", outputs=got)
    return {"outputs": got}


def _ensure_eager(t):
    """Stages whose task had its eager stage recorded by an earlier process
    (compile, a resumed run) first redo the eager stage's work, unrecorded:
    model, inputs of seed 0, output. Call under the shared lock."""
    if t.model is None or t.out0 is None:
        _eager(t)


def st_deterministic(t, ctx):
    with ctx["lock"].shared():
        _ensure_eager(t)
        model2 = _build(t)
        again = _run(model2, t.x0, "second run")
        _sync(t.device)
        d = kbtask.max_abs_diff(t.out0, again)
        bitwise = len(t.out0) == len(again) and all(torch.equal(a, b) for a, b in zip(t.out0, again))
        same = bitwise or kbtask.close(t.out0, again, atol=1e-5, rtol=1e-5)
        del model2, again
    if not same:
        raise Fail("nondeterministic", f"two runs on the same inputs differ (max abs diff {d:.3g})",
                   max_abs_diff=_num(d))
    return {"bitwise": bitwise, "max_abs_diff": _num(d)}


def _num(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else str(v)


def st_nondegenerate(t, ctx):
    with ctx["lock"].shared():
        _ensure_eager(t)
        info = {}
        for i, o in enumerate(t.out0):
            if o.is_floating_point() and not bool(torch.isfinite(o).all()):
                raise Fail("nonfinite", f"output {i} has NaN or Inf values")
            if o.numel() > 1:
                lo, hi = o.min(), o.max()
                if bool(lo == hi):
                    raise Fail("constant_output", f"every element of output {i} is {lo.item():.6g}")
        x1 = _inputs(t, 1)
        out1 = _run(t.model, x1, "forward on the inputs of seed 1")
        d = kbtask.max_abs_diff(t.out0, out1)
        scale = max(float(o.abs().max().item()) if o.numel() else 0.0 for o in t.out0)
        del x1, out1
    info["input_sensitivity"] = _num(d)
    if not (d > 1e-6 * (1.0 + scale)):
        raise Fail("input_insensitive", f"the same output for the inputs of seeds 0 and 1 (max abs diff {d:.3g})",
                   **info)
    return info


def st_decontam(t, ctx):
    refs = ctx["refs"]
    if refs is None or not refs.items:
        return {"similarity": None, "nearest": None, "references": 0}
    sim, nearest = refs.nearest(t.tokens)
    info = {"similarity": round(sim, 4), "nearest": nearest, "references": len(refs.items)}
    if sim > ctx["max_similarity"]:
        raise Fail("contaminated", f"AST similarity {sim:.3f} to {nearest} is above {ctx['max_similarity']}", **info)
    return info


def st_compile(t, ctx):
    import torch._dynamo
    with ctx["lock"].shared():
        _ensure_eager(t)
    torch._dynamo.reset()
    start = time.time()
    try:
        compiled = torch.compile(t.model)
        out = _run(compiled, t.x0, "torch.compile forward")
    except Fail as f:
        f.reason = "out_of_memory" if f.reason == "out_of_memory" else "compile_error"
        raise
    except Exception as e:  # noqa: BLE001
        raise Fail("compile_error", kbtask.one_line(e))
    _sync(t.device)
    d = kbtask.max_abs_diff(out, t.out0)
    info = {"max_abs_diff": _num(d), "compile_seconds": round(time.time() - start, 2)}
    ok = kbtask.close(out, t.out0, atol=1e-2, rtol=1e-2)
    del out, compiled
    torch._dynamo.reset()
    if not ok:
        raise Fail("compile_mismatch", f"torch.compile differs from eager (max abs diff {d:.3g})", **info)
    return info


def st_timing(t, ctx):
    if t.device.type != "cuda":
        return "skipped", {"reason": "no_gpu", "message": "eager timing needs a CUDA device"}
    with ctx["lock"].shared():
        _ensure_eager(t)
    lo, hi = ctx["min_ms"], ctx["max_ms"]
    with ctx["lock"].exclusive():  # the GPU to this worker alone
        for _ in range(3):
            _run(t.model, t.x0, "warm-up")
        torch.cuda.synchronize(t.device)
        times = []
        for _ in range(10):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            _run(t.model, t.x0, "timed forward")
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
            if (times[-1] > 3 * hi and len(times) >= 2) or (sum(times) > 500.0 and len(times) >= 3):
                break
    times.sort()
    ms = times[len(times) // 2]
    info = {"eager_ms": round(ms, 4), "calls": len(times), "min_ms": round(times[0], 4)}
    if ms < lo:
        raise Fail("too_fast", f"eager forward {ms:.3f} ms is under {lo} ms", **info)
    if ms > hi:
        raise Fail("too_slow", f"eager forward {ms:.3f} ms is over {hi} ms", **info)
    return info


STAGES = {"parse": st_parse, "eager": st_eager, "deterministic": st_deterministic,
          "nondegenerate": st_nondegenerate, "decontam": st_decontam, "compile": st_compile, "timing": st_timing}


def filter_one(job, stages, ctx, emit=kbtask.emit):
    """Runs `stages` on one job; emits a line per finished stage and returns
    the task's result."""
    t = Task(job, ctx["device"], ctx["init_seed"])
    result = {"id": job["id"], "stages": {}, "verdict": "kept", "dropped_at": None, "reason": None}
    start = time.time()
    signal.alarm(ctx["timeout"])
    current = None
    try:
        for name in stages:
            current = name
            s0 = time.time()
            if name != "parse" and not hasattr(t, "tokens"):
                st_parse(t, ctx)
            try:
                r = STAGES[name](t, ctx)
            except TaskError as e:
                raise Fail(e.kind, e.message)
            status, info = ("pass", r) if not isinstance(r, tuple) else r
            result["stages"][name] = dict(status=status, **info, seconds=round(time.time() - s0, 3))
            emit({"id": job["id"], "stage": name, "result": result["stages"][name]})
    except Fail as f:
        result["stages"][current] = dict(status="fail", reason=f.reason, message=f.message, **f.extra)
        result.update(verdict="dropped", dropped_at=current, reason=f.reason)
    except _Timeout:
        result["stages"][current] = dict(status="fail", reason="timeout",
                                         message=f"the task took over {ctx['timeout']} s")
        result.update(verdict="dropped", dropped_at=current, reason="timeout")
    except Exception as e:  # noqa: BLE001 - one task's failure must not stop the batch
        reason = "out_of_memory" if _is_oom(e) else "internal_error"
        result["stages"][current] = dict(status="fail", reason=reason, message=kbtask.one_line(e))
        result.update(verdict="dropped", dropped_at=current, reason=reason)
    finally:
        signal.alarm(0)
    for name in stages:
        result["stages"].setdefault(name, {"status": "not_run"})
    result["seconds"] = round(time.time() - start, 3)
    name = getattr(t.mod, "__name__", None)
    del t
    sys.modules.pop(name, None)
    gc.collect()
    if ctx["device"].type == "cuda":
        torch.cuda.empty_cache()
    return result


def poisoned(result):
    """Whether a result says the CUDA context is broken (sticky error)."""
    for r in result["stages"].values():
        msg = r.get("message", "") if isinstance(r, dict) else ""
        if any(p in msg for p in _CUDA_POISON) and "out of memory" not in msg.lower():
            return True
    return False


def _job_lines(path):
    """Jobs from a file, or from stdin line by line as they arrive ("-")."""
    if path == "-":
        while True:
            line = sys.stdin.readline()
            if not line:
                return
            if line.strip():
                yield json.loads(line)
    else:
        with open(path) as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def main():
    ap = argparse.ArgumentParser(description="kbsynth filter stages (run by kbsynth filter)")
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--stages", default=",".join(ALL_STAGES))
    ap.add_argument("--reference", action="append", default=[])
    ap.add_argument("--max-similarity", type=float, default=0.9)
    ap.add_argument("--min-ms", type=float, default=1.0)
    ap.add_argument("--max-ms", type=float, default=100.0)
    ap.add_argument("--init-seed", type=int, default=kbtask.DEFAULT_INIT_SEED)
    ap.add_argument("--timeout", type=int, default=TIMEOUT_S, help="seconds per task (soft: SIGALRM)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--gpu-lock", default="", help="folder of the lock files shared by the workers of one GPU")
    a = ap.parse_args()
    stages = [s for s in a.stages.split(",") if s]
    bad = [s for s in stages if s not in STAGES]
    if bad:
        sys.stderr.write("synth_filter.py: unknown stage(s) " + ", ".join(bad) + "\n")
        return 2
    device = torch.device(a.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.stderr.write("synth_filter.py: no CUDA device\n")
            return 3
        torch.zeros(1, device=device)  # the CUDA context, before "ready"
    threads = int(os.environ.get("KB_TORCH_THREADS", "0")) or a.threads
    if threads > 0:
        torch.set_num_threads(threads)
    if "compile" in stages:
        # Imported once per worker, not in the first task's time.
        importlib.import_module("torch._dynamo")
        importlib.import_module("torch._inductor.config")
    refs = synth_ast.ReferenceSet(a.reference) if "decontam" in stages and a.reference else None
    ctx = {"device": device, "init_seed": a.init_seed, "refs": refs, "max_similarity": a.max_similarity,
           "min_ms": a.min_ms, "max_ms": a.max_ms, "timeout": a.timeout,
           "lock": GpuLock(a.gpu_lock, device)}
    signal.signal(signal.SIGALRM, _alarm)
    kbtask.emit({"hello": {"pid": os.getpid(), "torch": kbtask.torch_version(), "device": str(device),
                           "startup_s": round(time.time() - _T0, 3)}})
    for job in _job_lines(a.jobs):
        job_stages = [s for s in job.get("stages", stages) if s in STAGES]
        result = filter_one(job, job_stages, ctx)
        kbtask.emit(result)
        if device.type == "cuda" and poisoned(result):
            sys.stderr.write("synth_filter.py: CUDA error on " + job["id"] + "; exiting for a fresh context\n")
            return 4
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the driver went away
        sys.exit(1)
