#!/usr/bin/env python3
"""Captures task bundles: for each job, runs model.py under PyTorch and writes
reference.pt, inputs.pt (when get_inputs scripts) and task.json.

Run by `kbsynth export` / `kbsynth import` (tools/kbsynth), not by hand:

    capture.py JOBS.jsonl
    capture.py -              jobs from stdin, one per line as they arrive:
                              a long-lived worker of kbsynth's capture pool
                              (lib/synth/capture_pool.h), which first prints
                              {"hello": {"pid": N}}
    ... [--timeout S] [--threads N] [--device D]   the per-task limit
                              (default $KB_CAPTURE_TIMEOUT or 300 s), torch
                              threads, and where the forwards run

Where the forwards run: --device, else $KB_CAPTURE_DEVICE, else "cpu"; or
"cuda" (or "cuda:N"), or "auto" (cuda when torch sees a GPU, else cpu). On a
GPU everything happens there: the weights are drawn by the device's
generator (task.json's init.device says so; reference.pt keeps them), the
checks' inputs are made there by get_inputs() with the device as its
default (as kbprof makes a timed call's inputs), each seed once, and the
forwards, the checks and the trace run there. The inputs the bundle's users
make (its canonical inputs) stay the CPU generator's: only the capture's
own checks use device-made ones. The saved weights are on the CPU. A
trace's recorded device (`device=x.device`) is made to follow the inputs'
device, so a reference runs wherever its inputs are. A task whose trace
still names the GPU in its graph, or that runs the GPU out of memory, is
captured again on the CPU (a note says so).

Each line of JOBS.jsonl is one job:
    {"dir": "...", "id": "...", "provenance": {...},
     "init_seed": 42, "tolerance": {...}, "correctness_seeds": [...],
     "inputs_exhaustive": false,
     "keep": {...}}            # fields carried over from an older task.json
and each job prints one result line on stdout:
    {"dir": ..., "id": ..., "status": "ok", "capture": "script", "generator": "spec", "device": "cuda",
     "inputs_on": "cuda", "init_device": "cuda", "seconds": 1.2}
    {"dir": ..., "id": ..., "status": "failed", "reason": "init_error", "message": "..."}
"""

import copy
import datetime
import errno
import functools
import io
import json
import os
import shutil
import signal
import sys
import time
import traceback
import types

# SIGINT / SIGTERM (Ctrl-C, or kbsynth passing its own on) before the work
# starts: leave at once, quietly (importing torch takes seconds; a traceback
# out of it says nothing). main() replaces this with a clean stop.
for _sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_sig, lambda signum, frame: os._exit(128 + signum))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import degenerate  # noqa: E402
import kbtask  # noqa: E402
from kbtask import TaskError, torch  # noqa: E402

TIMEOUT_S = int(os.environ.get("KB_CAPTURE_TIMEOUT", "300"))


class _OnCpu(Exception):
    """The capture cannot be made on the GPU (the trace baked the device
    in, or the GPU ran out of memory): capture the task again on the CPU.
    out_of_memory: the GPU may hold it once other workers give memory back."""

    def __init__(self, message, out_of_memory=False):
        super().__init__(message)
        self.out_of_memory = out_of_memory


class _Timeout(BaseException):
    """The capture's time limit: not an Exception, so that no `except
    Exception` around a task's forward turns it into a forward_error (a
    timed-out capture is reported with reason "timeout")."""


def _alarm(signum, frame):
    raise _Timeout()


class _Stop(BaseException):
    """SIGINT / SIGTERM during a capture: not an Exception, so that no
    `except Exception` of a task turns it into that task's failure."""


_stop_signal = 0


def _on_stop(signum, frame):
    global _stop_signal
    if _stop_signal:  # the same stop again (Ctrl-C reaches us and kbsynth passes it on)
        return
    _stop_signal = signum
    raise _Stop()


def _unraisable(u):
    """A _Stop raised inside a callback Python cannot propagate from (a
    weakref's, during garbage collection) is printed with a traceback and
    dropped: raise it again from the main loop instead, quietly."""
    global _stop_signal
    if isinstance(u.exc_value, _Stop) and _stop_signal:
        signum, _stop_signal = _stop_signal, 0
        signal.raise_signal(signum)
        return
    sys.__unraisablehook__(u)


def _eager(model, xs, where="forward"):
    with torch.no_grad():
        try:
            out = model(*xs)
        except TaskError:
            raise
        except Exception as e:  # noqa: BLE001
            if kbtask.gpu_out_of_memory(e):
                raise _OnCpu("the GPU ran out of memory in " + where + ": " + kbtask.one_line(e), out_of_memory=True)
            raise TaskError("forward_error", where + ": " + kbtask.one_line(e))
    return kbtask.flatten_outputs(out, where)


def _bind_scalars(model, xs):
    """Makes forward take only the tensor inputs, the scalars fixed to the
    recorded values (torch.jit.trace takes tensors only). The class is
    swapped in place so that state_dict names do not change."""
    cls = type(model)
    base_forward = cls.forward
    pattern = [None if isinstance(x, torch.Tensor) else x for x in xs]

    def forward(self, *tensors):
        it = iter(tensors)
        args = [next(it) if p is None else p for p in pattern]
        return base_forward(self, *args)

    bound = type(cls.__name__, (cls,), {"forward": forward})
    model.__class__ = bound
    return model


def _copies_faithfully(model):
    """False when a deep copy of the model would still call the original's
    modules: deepcopy shares functions, so a lambda kept as an attribute
    (KernelBench level3/44_MiniGPTBlock: `self.mlpf = lambda x:
    m.c_proj(...)`) goes on using the original's weights, which trace then
    meets as foreign constants. Such a model is built again instead."""
    for m in model.modules():
        for v in vars(m).values():
            if isinstance(v, (types.FunctionType, functools.partial)):
                return False
    return True


def _follow_input_device(sm, device):
    """Makes a trace follow its inputs' device; returns how many device
    constants it replaced. Trace records `torch.randn(..., device=x.device)`
    or `h.to(x.device)` as the device of the capture (KernelBench
    level3/33_VanillaRNN, 35_LSTM), so a reference captured on the CPU would
    make CPU tensors beside the GPU's inputs, and one captured on a GPU could
    only run there. Each Device constant equal to the capture's device, in
    each traced method, becomes prim::device of that method's first tensor
    input; another device (an explicit .cpu() in a GPU capture) is kept. The
    checks on seeds 0 and 1 that follow run the rewritten graph."""
    replaced = 0
    for m in sm.modules():
        fn = getattr(m, "forward", None)
        graph = getattr(fn, "graph", None)
        if graph is None:
            continue
        tensors = [v for v in list(graph.inputs())[1:] if isinstance(v.type(), torch._C.TensorType)]
        for n in graph.findAllNodes("prim::Constant"):
            if not tensors or not isinstance(n.output().type(), torch._C.DeviceObjType):
                continue
            if torch.device(n.output().toIValue()).type != device.type:
                continue
            d = graph.create("prim::device", [tensors[0]])
            d.output().setType(torch._C.DeviceObjType.get())
            d.insertBefore(n)
            n.output().replaceAllUsesWith(d.output())
            replaced += 1
    return replaced


def _printable(sm):
    """Raises when the scripted module cannot be saved. Script accepts an
    unannotated `def forward(self, x, mask=None)` as a Tensor argument whose
    default is an undefined tensor; the module runs, but printing its code
    (as save does) fails with "strides() called on an undefined Tensor"
    (KernelBench level3/33_VanillaRNN, 46-47_NetVlad). Printing the code is
    the save without writing the weights."""
    for m in sm.modules():
        if not m._c._has_method("forward"):  # a ModuleList or ModuleDict: no code of its own
            continue
        try:
            m.code
        except Exception as e:  # noqa: BLE001
            raise TaskError("capture_error", "the scripted module cannot be saved: " + kbtask.one_line(e))


def _capture_reference(new_model, x0, x1, out0, out1, device):
    """(module, method, reference_args, notes): TorchScript by script, else by
    trace; the module on `device`. new_model() gives the model as built."""
    notes = []
    scalars = any(not isinstance(x, torch.Tensor) for x in x0)

    def check(sm, xs, want, label):
        got = _eager(sm, xs, label)
        d = kbtask.max_abs_diff(got, want)
        if not kbtask.close(got, want):
            raise TaskError("mismatch", f"{label} differs from eager (max abs diff {d:.3g})")

    model = new_model().to(device)
    try:
        with torch.no_grad(), kbtask.warnings.catch_warnings():
            kbtask.warnings.simplefilter("ignore")
            sm = torch.jit.script(model)
        _printable(sm)
        check(sm, x0, out0, "scripted forward (seed 0)")
        check(sm, x1, out1, "scripted forward (seed 1)")
        return sm, model, "script", "all", notes
    except _OnCpu:
        raise
    except Exception as e:  # noqa: BLE001
        notes.append("torch.jit.script: " + (e.message if isinstance(e, TaskError) else kbtask.one_line(e)))

    model = new_model().to(device)
    tensors0 = [x for x in x0 if isinstance(x, torch.Tensor)]
    tensors1 = [x for x in x1 if isinstance(x, torch.Tensor)]
    if scalars:
        _bind_scalars(model, x0)
    try:
        with torch.no_grad(), kbtask.warnings.catch_warnings():
            kbtask.warnings.simplefilter("ignore")
            sm = torch.jit.trace(model, tuple(tensors0), check_trace=False)
        if _follow_input_device(sm, device):
            notes.append("torch.jit.trace: the device the trace recorded follows the first input's device")
        if device.type != "cpu" and device.type in str(sm.inlined_graph):
            # e.g. torch.zeros(..., device=x.device) traced: the graph would
            # make its tensors on this device wherever the reference runs.
            raise _OnCpu("the trace records the device " + device.type + " in its graph")
        check(sm, tensors0, out0, "traced forward (seed 0)")
        # A second input set catches data-dependent control flow frozen by the trace.
        check(sm, tensors1, out1, "traced forward (seed 1)")
        return sm, model, "trace", ("tensors" if scalars else "all"), notes
    except _OnCpu:
        raise
    except Exception as e:  # noqa: BLE001
        if kbtask.gpu_out_of_memory(e):  # the trace's own forward
            raise _OnCpu("the GPU ran out of memory in torch.jit.trace: " + kbtask.one_line(e), out_of_memory=True)
        notes.append("torch.jit.trace: " + (e.message if isinstance(e, TaskError) else kbtask.one_line(e)))
    raise TaskError("capture_error", "; ".join(notes))


def capture(job, tmpdir, device):
    """Captures one task with its forwards on `device` (a torch.device)."""
    d = job["dir"]
    model_py = os.path.join(d, "model.py")
    if not os.path.exists(model_py):
        raise TaskError("load_error", f"no model.py in {d}")
    init_seed = int(job.get("init_seed", kbtask.DEFAULT_INIT_SEED))
    mod = kbtask.load_program(model_py)
    args = kbtask.init_args(mod)
    # On a GPU the weights are drawn there (the constructor's factory calls
    # default to the device): a large model's initialisation costs seconds
    # to tens of seconds of CPU time otherwise (KernelBench level3/1_MLP has
    # 671 M parameters). reference.pt keeps the weights, so a bundle carries
    # them wherever they were drawn; task.json's init.device says where.
    model, init_where = kbtask.build_model_where(mod, init_seed, args, device)
    init_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    # Copies of the model as built, for the script and trace attempts: a copy
    # is a memory copy, another construction draws every weight again (seconds
    # for a large model). The round trip below still builds one afresh.
    try:
        pristine = copy.deepcopy(model) if _copies_faithfully(model) else None
    except Exception:  # noqa: BLE001 - a module that does not copy is built again
        pristine = None

    def new_model():
        return copy.deepcopy(pristine) if pristine is not None else kbtask.build_model(mod, init_seed, args, init_where)

    model.to(device)

    # get_inputs() for seeds 0 and 1, made once each. On a GPU they are made
    # there (factory calls default to the device, its generator seeded), as
    # kbprof makes its timed calls' inputs: KernelBench's fill gigabytes,
    # which the CPU's generator takes seconds to tens of seconds for. The
    # checks below need inputs of the task's kind, not the canonical values
    # (the CPU generator's, which the bundle's users make themselves). A
    # get_inputs that cannot run so, or a scripted one that does not
    # reproduce it there, has its inputs made on the CPU and copied.
    python_cache = {}
    made_on = [device if device.type != "cpu" else None]

    def inputs_on_cpu():
        made_on[0] = None
        python_cache.clear()

    def python_inputs(seed):
        if seed not in python_cache:
            try:
                python_cache[seed] = kbtask.python_inputs(mod, seed, made_on[0])
            except TaskError:
                if made_on[0] is None:
                    raise
                inputs_on_cpu()
                python_cache[seed] = kbtask.python_inputs(mod, seed)
        return python_cache[seed]

    def on_device(xs):
        return kbtask.to_device(xs, device)

    # Eager on get_inputs() itself, twice on the same inputs without
    # reseeding: a forward that draws random numbers (dropout, randn) differs.
    # Within the default tolerance (10x tighter than verification's), on the
    # CPU as on a GPU: kernels with atomics (index_add, scatter_add) and
    # threaded reductions may round differently from run to run, and a draw
    # whose effect on the output is below the tolerance cannot change a
    # verdict (KernelBench level3/35_LSTM draws h0 and c0 with torch.randn;
    # after 6 layers x 512 steps they move the output by 7e-9). Such a task
    # is kept, with a note.
    x0 = python_inputs(0)
    x0d = on_device(x0)
    out0 = _eager(model, x0d)
    again = _eager(model, x0d)
    repeat_notes = []
    if not kbtask.close(out0, again):
        raise TaskError("nondeterministic", "two runs on the same inputs differ (max abs diff "
                        f"{kbtask.max_abs_diff(out0, again):.3g}): forward draws random numbers "
                        "(dropout in training mode, torch.randn, ...) or is otherwise not repeatable")
    if not kbtask.close(out0, again, atol=0, rtol=0):
        repeat_notes.append("repeatable within atol = rtol = 1e-5, not bitwise: two runs on the same inputs "
                            f"differ by {kbtask.max_abs_diff(out0, again):.3g} at most")
    del again, x0d

    # The input generator: scripted get_inputs if it scripts and reproduces
    # get_inputs() exactly, else the recorded spec.
    specs, spec_problem = None, None
    try:
        specs = [kbtask.describe_input(i, x) for i, x in enumerate(x0)]
    except TaskError as e:
        spec_problem = e.message
    generator, gen_notes = None, []
    fn, why = (None, "get_inputs returns a scalar") if any(not isinstance(x, torch.Tensor) for x in x0) \
        else kbtask.script_get_inputs(mod, tmpdir)
    if fn is not None:
        def differs(run):
            """The first seed whose inputs `run` does not reproduce, or None."""
            for s in (0, 1):
                torch.manual_seed(s)
                got, want = list(run()), python_inputs(s)
                if len(got) != len(want) or any(g.device != w.device for g, w in zip(got, want)):
                    return s
                if not kbtask.close(got, want, atol=0, rtol=0):
                    return s
            return None

        try:
            bad = 0
            if made_on[0] is not None:
                # The scripted program placed on the GPU, as kbprof runs it.
                try:
                    bad = differs(kbtask.place_on(fn, device))
                except Exception as e:  # noqa: BLE001 - it cannot run there: check it on the CPU
                    if kbtask.gpu_out_of_memory(e):
                        raise
                    bad = 0
                if bad is not None:
                    inputs_on_cpu()
            if bad is not None:
                bad = differs(fn)
            if bad is not None:
                raise TaskError("spec_error", f"scripted get_inputs differs from get_inputs() for seed {bad}")
            generator = "scripted"
        except Exception as e:  # noqa: BLE001
            why = e.message if isinstance(e, TaskError) else kbtask.one_line(e)
    if generator is None:
        gen_notes.append("scripted get_inputs: " + why)
        if specs is None:
            raise TaskError("spec_error", spec_problem + "; " + why)
        # The spec must make inputs the model accepts, with outputs of the same form.
        xs = kbtask.make_spec_inputs(specs, 0, made_on[0] or "cpu")
        xs = on_device(xs)
        try:
            outs = _eager(model, xs, "forward on spec inputs")
            del xs
        except TaskError as e:
            raise TaskError("spec_error", "recorded input spec: " + e.message)
        if [(o.dtype, o.shape) for o in outs] != [(o.dtype, o.shape) for o in out0]:
            raise TaskError("spec_error", "outputs on spec inputs differ in shape or dtype from get_inputs()")
        generator = "spec"

    task = {"generator": generator, "inputs": specs or []}
    del x0, out0
    x0 = kbtask.bundle_inputs(mod, task, 0, device, python_inputs, draw_on=made_on[0] or "cpu")
    x1 = kbtask.bundle_inputs(mod, task, 1, device, python_inputs, draw_on=made_on[0] or "cpu")
    python_cache.clear()
    out0 = _eager(model, x0)
    out1 = _eager(model, x1)
    sm, captured_model, method, ref_args, notes = _capture_reference(new_model, x0, x1, out0, out1, device)
    notes = repeat_notes + notes
    pristine = None  # the copy's memory back before the save
    # A task a trivial solution passes (a fixed tensor, all zeros) gives
    # rewards that measure nothing: flagged in task.json, kept out of
    # rewards by lib/reward (scripts/degenerate.py says how it is decided).
    flagged = degenerate.check(out0, out1, job.get("tolerance"))

    # Weights as right after construction (forward may update buffers, e.g.
    # batch-norm running statistics in training mode).
    with torch.no_grad():
        for k, v in sm.state_dict().items():
            if k in init_state:
                v.copy_(init_state[k])
    ref_path = os.path.join(d, "reference.pt")
    sm.cpu()  # the saved weights are the CPU's, wherever the capture ran
    save_module(sm, ref_path)
    inputs_path = os.path.join(d, "inputs.pt")
    if generator == "scripted":
        save_module(fn, inputs_path)
    elif os.path.exists(inputs_path):
        os.remove(inputs_path)

    # Round trip: the saved file reproduces eager.
    loaded = torch.jit.load(ref_path, map_location=device)
    xs = x0 if ref_args == "all" else [x for x in x0 if isinstance(x, torch.Tensor)]
    fresh = kbtask.build_model(mod, init_seed, args, init_where).to(device)
    want = _eager(fresh, x0)
    got = _eager(loaded, xs, "saved reference")
    if not kbtask.close(got, want):
        raise TaskError("mismatch", f"saved reference.pt differs from eager (max abs diff "
                        f"{kbtask.max_abs_diff(got, want):.3g})")

    state = [{"name": n, "kind": "parameter", "dtype": kbtask.DTYPE_NAMES.get(p.dtype, str(p.dtype)),
              "shape": list(p.shape)} for n, p in loaded.named_parameters()]
    state += [{"name": n, "kind": "buffer", "dtype": kbtask.DTYPE_NAMES.get(b.dtype, str(b.dtype)),
               "shape": list(b.shape)} for n, b in loaded.named_buffers()]

    keep = job.get("keep", {})
    model_sha = kbtask.sha256_file(model_py)
    files = {"model.py": model_sha, "reference.pt": kbtask.sha256_file(ref_path)}
    if generator == "scripted":
        files["inputs.pt"] = kbtask.sha256_file(inputs_path)
    same_program = keep.get("model_sha256") == model_sha
    doc = {
        "format": "kb-task",
        "format_version": kbtask.FORMAT_VERSION,
        "id": job["id"],
        "provenance": job.get("provenance", {"source": "file"}),
        "files": files,
        "torch_version": kbtask.torch_version(),
        "captured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "init": {"seed": init_seed, "args": [kbtask.json_value(a) for a in args], "device": init_where.type},
        "training": bool(model.training),
        "capture": method,
        "capture_notes": notes,
        "reference_args": ref_args,
        "generator": generator,
        "generator_notes": gen_notes,
        "inputs": specs or [],
        "outputs": [{"dtype": kbtask.DTYPE_NAMES.get(o.dtype, str(o.dtype)), "shape": list(o.shape)}
                    for o in out0],
        "state": state,
        "correctness_seeds": job.get("correctness_seeds", kbtask.DEFAULT_SEEDS),
        # Written explicitly: false unless the job (or the bundle's older
        # task.json) says get_inputs draws every input the operator takes;
        # verification then adds domain draws beyond get_inputs
        # (docs/task-format.md, docs/threat-model.md).
        "inputs_exhaustive": bool(job.get("inputs_exhaustive", False)),
        # null: checked, a trivial solution does not pass; else why it does.
        "degenerate": flagged,
        "compiled": keep.get("compiled", {}) if same_program else {},
        "baselines": keep.get("baselines", {}) if same_program else {},
    }
    # No "tolerance" unless the job sets one: the precision contract gives it
    # (docs/task-format.md), and a tolerance in task.json can only tighten it.
    if "tolerance" in job:
        doc["tolerance"] = job["tolerance"]
    if specs is None:
        doc["inputs"] = []
        doc["generator_notes"].append("no spec: " + spec_problem)
    kbtask.write_json(os.path.join(d, "task.json"), doc)
    if not same_program:
        cdir = os.path.join(d, "compiled")
        if os.path.isdir(cdir):
            for f in os.listdir(cdir):
                os.remove(os.path.join(cdir, f))
    return {"capture": method, "generator": generator, "reference_args": ref_args,
            "outputs": len(out0), "notes": notes + gen_notes, "device": str(device),
            "inputs_on": str(made_on[0] or "cpu"), "init_device": init_where.type, "degenerate": flagged}


GPU_ATTEMPTS = 3  # a task that runs the GPU out of memory, before the CPU


def capture_task(job, tmpdir, device):
    """capture() on `device`, again on the CPU when the GPU cannot hold it.
    Several capture workers share one GPU: a task that ran it out of memory
    is tried again there after a pause (the others' tasks end and give their
    memory back) before it goes to the CPU, where KernelBench's sizes take
    minutes."""
    if device.type == "cpu":
        return capture(job, tmpdir, device)
    for attempt in range(GPU_ATTEMPTS):
        try:
            return capture(job, tmpdir, device)
        except _OnCpu as e:
            why, again = str(e), e.out_of_memory
        except Exception as e:  # noqa: BLE001 - outside a forward: moving inputs, comparing
            if not kbtask.gpu_out_of_memory(e):
                raise
            why, again = "the GPU ran out of memory: " + kbtask.one_line(e), True
        torch.cuda.empty_cache()
        if not again:
            break
        if attempt + 1 < GPU_ATTEMPTS:
            time.sleep(3 * (attempt + 1))
    result = capture(job, tmpdir, torch.device("cpu"))
    result["notes"] = result["notes"] + ["captured on the CPU: " + why]
    return result


def capture_device(flag):
    """--device, else $KB_CAPTURE_DEVICE, else "cpu", as a torch.device that is
    there; "auto" is cuda when torch sees a GPU, else cpu."""
    what, name = ("--device", flag) if flag else ("KB_CAPTURE_DEVICE", os.environ.get("KB_CAPTURE_DEVICE", ""))
    name = name or "cpu"
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise SystemExit(f"capture.py: {what} {name!r} is not a torch device")
    if device.type not in ("cpu", "cuda"):
        raise SystemExit(f"capture.py: {what} {name!r}: only cpu and cuda are supported")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"capture.py: {what} {name!r} but torch sees no CUDA device")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise SystemExit(f"capture.py: {what} {name!r} but torch sees {torch.cuda.device_count()} CUDA device(s)")
    return device


def save_module(m, path):
    """Saves a TorchScript module through a buffer: a full disk is then
    Python's OSError (ENOSPC), not a C++ abort inside torch's zip writer
    that kills the worker with a page of stack frames."""
    buf = io.BytesIO()
    torch.jit.save(m, buf)
    with open(path, "wb") as f:
        f.write(buf.getbuffer())


def main():
    global TIMEOUT_S
    argv = sys.argv[1:]
    threads = 0
    device_flag = ""
    try:
        while len(argv) >= 3 and argv[-2] in ("--timeout", "--threads", "--device"):
            if argv[-2] == "--timeout":
                TIMEOUT_S = int(argv[-1])
            elif argv[-2] == "--device":
                device_flag = argv[-1]
            else:
                threads = int(argv[-1])
            argv = argv[:-2]
    except ValueError:
        argv = []
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    serve = argv[0] == "-"

    def jobs():
        # From a file, or from stdin line by line as they arrive (the pool
        # sends the next job only after this one's result line).
        src = sys.stdin if serve else open(argv[0])
        while True:
            line = src.readline()
            if not line:
                return
            if line.strip():
                yield json.loads(line)

    torch.set_num_threads(threads or int(os.environ.get("KB_TORCH_THREADS", "0")) or torch.get_num_threads())
    device = capture_device(device_flag)
    tmpdir = kbtask.new_tmpdir()
    signal.signal(signal.SIGALRM, _alarm)
    # A stop ends the batch between or inside captures: the task in progress
    # prints no result line (kbsynth reports it as not done and removes what
    # it had made), the temporary folder goes, and we exit 128 + signal
    # without a traceback.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_stop)
    sys.unraisablehook = _unraisable
    if serve:
        kbtask.emit({"hello": {"pid": os.getpid()}})
    try:
        for job in jobs():
            if _stop_signal:
                break
            start = time.time()
            result = {"dir": job["dir"], "id": job["id"]}
            signal.alarm(TIMEOUT_S)
            try:
                result.update(status="ok", **capture_task(job, tmpdir, device))
            except TaskError as e:
                result.update(status="failed", reason=e.kind, message=e.message)
            except _Timeout:
                result.update(status="failed", reason="timeout", message=f"capture took over {TIMEOUT_S} s")
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                    traceback.print_exc(file=sys.stderr)
                    result.update(status="failed", reason="internal_error", message=kbtask.one_line(e))
                else:  # the machine's fault: kbsynth stops the import (exit 3), no verdict on the task
                    name = errno.errorcode.get(e.errno, str(e.errno))
                    result.update(status="failed", reason="no_space",
                                  message=f"{os.strerror(e.errno)} ({name}) writing {e.filename or 'the bundle'}")
            except Exception as e:  # noqa: BLE001 - one task's failure must not stop the batch
                # Our bug, not the task's: the traceback goes to stderr (kbsynth's log).
                traceback.print_exc(file=sys.stderr)
                result.update(status="failed", reason="internal_error", message=kbtask.one_line(e))
            finally:
                signal.alarm(0)
                if device.type == "cuda":
                    torch.cuda.empty_cache()  # the next task starts with the GPU's memory free
            if _stop_signal:  # a stop swallowed inside the capture: its result is not trusted
                break
            result["seconds"] = round(time.time() - start, 3)
            kbtask.emit(result)
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        shutil.rmtree(tmpdir, ignore_errors=True)
    if _stop_signal:
        sys.stderr.flush()
        os._exit(128 + _stop_signal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
