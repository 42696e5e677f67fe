#!/usr/bin/env python3
"""Builds the torch.compile baseline of task bundles: an AOTInductor package
compiled/<arch>.pt2 per device architecture ("cpu", "sm_90", ...), and
records it in task.json "compiled". Run by `kbsynth baseline` (and by
`kbsynth export --compiled`), not by hand:

    baseline.py --device cpu|cuda[:N] [--force] [--weights external|in_package] BUNDLE...
    baseline.py --device ... -      bundles from stdin, one JSON line {"dir": ...}
                                    each, as they arrive (kbsynth's pool: one
                                    process builds many, one at a time); a
                                    first line {"hello": {"pid": N}} says it
                                    is ready (importing torch takes seconds);
                                    on a GPU with "device_memory": its bytes

One result line per bundle on stdout (before a build, a line {"dir": ...,
"building": {...}} with what compiled/<arch>.failed.json needs, for the
pool to record a build it had to kill):
    {"dir": ..., "id": ..., "status": "ok"|"cached"|"failed", "arch": "cpu",
     "weights": "external", "seconds": 41.2, "max_abs_diff": 1e-7,
     "phases": {"model_and_inputs": 0.4, "export": 2.1, "compile": 37.0, "check": 1.7}}

A GPU out of memory anywhere in a build is reason "out_of_memory" (kbsynth
builds those bundles again one at a time once the others are done). A build
over $KB_BASELINE_TIMEOUT seconds (default 900; 0: none) is reason "timeout",
so that one slow model (KernelBench level 3's RNNs take minutes) cannot hold a
whole import. "retry_alone": true marks a failure that may be the other
builds' doing (out of memory, or AOTInductor's runtime "API call failed",
which hides the CUDA error behind it): kbsynth builds those again alone.

A failure is remembered in compiled/<arch>.failed.json (docs/task-format.md),
keyed by model.py's hash and the torch version: a later run without --force
reports it again at once ("remembered": true) instead of building for
minutes, except a failure that may be the other builds' doing, and a timeout
when the time limit is now longer.

The model is model.py's Model with reference.pt's weights loaded into it;
the comparison with eager is in full float32 (no TF32 in cuDNN or cuBLAS,
as kbcheck's reference); export and it (seeds 0 and 1) use inputs drawn on the
device (kbtask.drawn_inputs: the task's kind of inputs, not the canonical
CPU values, which take the CPU's generator seconds for KernelBench's sizes).

Weights: "external" (the default) keeps them out of the package
(aot_inductor.package_constants_in_so = False, nothing on disk); the loader
gets the reference's own parameters and buffers at load time
(AOTIModelPackageLoader::load_constants). When that fails for a module (a
constant that is not in its state_dict), the package is rebuilt with the
weights inside ("in_package").
"""

import argparse
import contextlib
import datetime
import gc
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbtask  # noqa: E402
from kbtask import TaskError, torch  # noqa: E402


def arch_of(device):
    if device.type == "cpu":
        return "cpu"
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def _eager(model, xs):
    with torch.no_grad():
        return kbtask.flatten_outputs(model(*xs))


def _rnn_ops():
    aten = torch.ops.aten
    return [getattr(getattr(aten, name), overload) for name in ("lstm", "gru", "rnn_tanh", "rnn_relu")
            for overload in ("input", "data")]


def _has_rnn(ep):
    ops = set(_rnn_ops())
    return any(n.op == "call_function" and n.target in ops for n in ep.graph.nodes)


def keep_rnns(ep):
    """torch.compile does not trace RNN modules (Dynamo's allow_rnn is off:
    they run eagerly), but export's default decompositions unroll them over
    the sequence: KernelBench level 3's LSTMs and GRUs (6 layers x 512 steps)
    built for over 5 minutes on the H200. Decomposing all else and keeping
    the RNN ops leaves them to Inductor (_build) as library calls, as in
    eager (on the CPU: see _RNN_ON_CUDA)."""
    if not _has_rnn(ep):
        return ep
    table = torch.export.default_decompositions()
    for op in _rnn_ops():
        table.pop(op, None)
    return ep.run_decompositions(table)


# Why a CUDA build of a graph with RNN ops fails at once, as measured on the
# H200 (torch 2.11, docs/gpu-validation.md, 2026-12-03): unrolled per time
# step, KernelBench level 3's LSTMs and GRUs built for over 300 s; traced as
# cuDNN's _cudnn_rnn (an Inductor fallback, weight_buf=None) they built, and
# the package crashed the process (SIGSEGV) when loaded. torch.compile itself
# runs RNN modules eagerly (Dynamo's allow_rnn is off).
_RNN_ON_CUDA = ("no CUDA baseline for RNN ops (aten.lstm/gru/rnn_*): unrolled per time step the build "
                "takes minutes, and AOTInductor's cuDNN RNN package crashes when loaded (torch 2.11); "
                "torch.compile runs RNN modules eagerly")


@contextlib.contextmanager
def _rnns_as_library_calls():
    """Inductor would unroll a kept RNN op all the same: its decomposition
    table has aten.lstm/gru/rnn_*, and torch._decomp registers the same
    unrolling functions as the ops' Python CompositeImplicitAutograd and
    Autograd kernels, which its trace (under the Python dispatcher) runs.
    Without them the op takes ATen's own composite kernel: one
    mkldnn_rnn_layer per LSTM layer on the CPU. (On a GPU there is no build:
    see _RNN_ON_CUDA.) Restored afterwards: the worker builds other bundles
    after this one."""
    from torch._C import DispatchKey
    import torch._inductor.decomposition as inductor_decomp
    kernels, decomps = {}, {}
    for op in _rnn_ops():
        kernels[op] = {k: op.py_kernels.pop(k) for k in (DispatchKey.Autograd, DispatchKey.CompositeImplicitAutograd)
                       if k in op.py_kernels}
        op._dispatch_cache.clear()
        if op in inductor_decomp.decompositions:
            decomps[op] = inductor_decomp.decompositions.pop(op)
    try:
        yield
    finally:
        for op, ks in kernels.items():
            op.py_kernels.update(ks)
            op._dispatch_cache.clear()
        inductor_decomp.decompositions.update(decomps)


def _build(ep, path, external):
    configs = {"aot_inductor.package_constants_in_so": not external}
    rnns = _rnns_as_library_calls() if _has_rnn(ep) else contextlib.nullcontext()
    with kbtask.warnings.catch_warnings(), rnns:
        kbtask.warnings.simplefilter("ignore")
        torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=configs)


def _check(path, external, state, mod, task, model, device, tol):
    runner = torch._inductor.aoti_load_package(path)
    if external:
        fqns = runner.get_constant_fqns()
        missing = [n for n in fqns if n not in state]
        if missing:
            raise TaskError("compile_error", "constants not in the state_dict: " + ", ".join(missing[:5]))
        runner.load_constants({n: state[n] for n in fqns}, check_full_update=True)
    worst = 0.0
    for seed in (0, 1):
        xs = kbtask.drawn_inputs(mod, task, seed, device)
        want = _eager(model, xs)
        with torch.no_grad():
            got = kbtask.flatten_outputs(runner(*[x for x in xs if isinstance(x, torch.Tensor)]))
        d = kbtask.max_abs_diff(got, want)
        if not kbtask.close(got, want, atol=tol["atol"], rtol=tol["rtol"]):
            raise TaskError("mismatch", f"compiled output differs from eager for seed {seed} (max abs diff {d:.3g})")
        worst = max(worst, d)
    return worst


def python_compile_check(bundle, device):
    """Where AOTInductor's package cannot be had: whether torch.compile in
    Python (what kbprof then times, docs/kbprof.md "Baselines") runs the
    task and matches eager on seeds 0 and 1 at the task's tolerance, as
    _check does for the package. {"status": "ok", "max_abs_diff_vs_eager",
    "seconds"} or {"status": "failed", "reason", "message", "seconds"}."""
    start = time.time()
    try:
        task = kbtask.read_task(bundle)
        mod = kbtask.load_program(os.path.join(bundle, "model.py"))
        model = kbtask.model_with_weights(mod, task, kbtask.bundle_weights(bundle, device), device)
        compiled = torch.compile(model)
        tol = task.get("tolerance", {"atol": 1e-2, "rtol": 1e-2})
        worst = 0.0
        for seed in (0, 1):
            xs = kbtask.drawn_inputs(mod, task, seed, device)
            with torch.no_grad(), kbtask.warnings.catch_warnings():
                kbtask.warnings.simplefilter("ignore")
                got = kbtask.flatten_outputs(compiled(*xs))
            want = _eager(model, xs)
            d = kbtask.max_abs_diff(got, want)
            if not kbtask.close(got, want, atol=tol["atol"], rtol=tol["rtol"]):
                return {"status": "failed", "reason": "mismatch", "seconds": round(time.time() - start, 1),
                        "message": f"torch.compile's output differs from eager for seed {seed} (max abs diff {d:.3g})"}
            worst = max(worst, d)
        return {"status": "ok", "max_abs_diff_vs_eager": worst, "seconds": round(time.time() - start, 1)}
    except _Timeout:
        raise
    except TaskError as e:
        return {"status": "failed", "reason": e.kind, "message": e.message, "seconds": round(time.time() - start, 1)}
    except Exception as e:  # noqa: BLE001
        reason = "out_of_memory" if kbtask.gpu_out_of_memory(e) else "compile_error"
        return {"status": "failed", "reason": reason, "message": "torch.compile: " + kbtask.one_line(e),
                "seconds": round(time.time() - start, 1)}
    finally:
        try:
            torch._dynamo.reset()
        except Exception:  # noqa: BLE001
            pass


def record_compile_baseline(bundle, arch, result):
    """task.json "compile_baseline.<arch>" (docs/task-format.md): which
    torch.compile figure kbprof can have for this task on this arch, and,
    when it is not AOTInductor's package, why; when there is none at all,
    the reason. Best effort, as remember()."""
    if result["status"] in ("ok", "cached"):
        entry = {"baseline": "aoti", "reason": None}
    else:
        aoti = result.get("reason", "?") + ": " + result.get("message", "")
        py = result.get("python_compile")
        if py and py.get("status") == "ok":
            entry = {"baseline": "python_compile", "reason": "AOTInductor: " + aoti,
                     "python_compile": py}
        else:
            entry = {"baseline": None, "python_compile": py,
                     "reason": "AOTInductor: " + aoti + ("; torch.compile in Python: " + py.get("reason", "?") + ": "
                                                         + py.get("message", "") if py else "")}
    entry["torch_version"] = kbtask.torch_version()
    entry["at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        task = kbtask.read_task(bundle)
        if task.get("compile_baseline", {}).get(arch, {}).get("baseline", "absent") == entry["baseline"] \
                and entry["baseline"] == "aoti":
            return
        task.setdefault("compile_baseline", {})[arch] = entry
        kbtask.write_json(os.path.join(bundle, "task.json"), task)
    except (OSError, ValueError, KeyError):
        pass


def _memo_path(bundle, arch):
    return os.path.join(bundle, "compiled", arch + ".failed.json")


def _remembered(bundle, task, arch, timeout_s):
    """The failure recorded for this model.py and torch version, when it
    still holds; else None."""
    try:
        with open(_memo_path(bundle, arch)) as f:
            memo = kbtask.json.load(f)
    except (OSError, ValueError):
        return None
    if (not isinstance(memo, dict) or memo.get("model") != task.get("files", {}).get("model.py")
            or memo.get("torch_version") != kbtask.torch_version() or memo.get("retry_alone")
            or not memo.get("reason")):
        return None
    if memo["reason"] == "timeout":
        was = memo.get("timeout_s") or 0
        if timeout_s <= 0 or (was > 0 and timeout_s > was):
            return None  # more time now than the build had
    return memo


def _memo_base(task, arch):
    """What every compiled/<arch>.failed.json says of the build it records."""
    return {"model": task.get("files", {}).get("model.py"), "python": sys.executable,
            "torch_version": kbtask.torch_version(), "arch": arch}


def remember(bundle, result, device, timeout_s):
    """Records a failed build (best effort: a read-only bundle builds again next time)."""
    arch = arch_of(device)
    try:
        task = kbtask.read_task(bundle)
        os.makedirs(os.path.join(bundle, "compiled"), exist_ok=True)
        kbtask.write_json(_memo_path(bundle, arch), {
            **_memo_base(task, arch),
            "reason": result["reason"],
            "message": result["message"],
            "error": result["reason"] + ": " + result["message"],
            "retry_alone": bool(result.get("retry_alone")),
            "python_compile": result.get("python_compile"),
            "timeout_s": timeout_s,
            "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        })
    except (OSError, ValueError, KeyError):
        pass


def build(bundle, device, force, weights, timeout_s=0):
    task = kbtask.read_task(bundle)
    arch = arch_of(device)
    out_dir = os.path.join(bundle, "compiled")
    out = os.path.join(out_dir, arch + ".pt2")
    entry = task.get("compiled", {}).get(arch)
    if (not force and entry and os.path.exists(out) and entry.get("torch_version") == kbtask.torch_version()
            and entry.get("sha256") == kbtask.sha256_file(out)):
        return {"status": "cached", "arch": arch, "weights": entry.get("weights")}
    memo = None if force else _remembered(bundle, task, arch, timeout_s)
    if memo:
        return {"status": "failed", "arch": arch, "reason": memo["reason"], "remembered": True,
                "message": memo.get("message", "") + f" (remembered from the build at {memo.get('at', '?')}; "
                           f"--force or deleting {_memo_path(bundle, arch)} builds again)"}
    # Before the build: what kbsynth's pool needs to record this failure when
    # it has to kill the worker (a build that outlives its alarm).
    kbtask.emit({"dir": bundle, "id": task.get("id"),
                 "building": {**_memo_base(task, arch), "memo": _memo_path(bundle, arch)}})

    start = time.time()
    # Seconds per phase (the result line's "phases"): where a build's time goes.
    phases = {}
    mark = [start]

    def phase(name):
        now = time.time()
        phases[name] = round(phases.get(name, 0.0) + now - mark[0], 2)
        mark[0] = now

    mod = kbtask.load_program(os.path.join(bundle, "model.py"))
    ref_weights = kbtask.bundle_weights(bundle, device)  # read once: GiB for a large model

    def fresh_model():
        # model.py's Model with reference.pt's weights (wherever they were drawn).
        return kbtask.model_with_weights(mod, task, ref_weights, device)

    model = fresh_model()
    state = {k: v for k, v in model.state_dict().items()}
    xs = kbtask.drawn_inputs(mod, task, 0, device)
    phase("model_and_inputs")
    try:
        with kbtask.warnings.catch_warnings():
            kbtask.warnings.simplefilter("ignore")
            ep = torch.export.export(model, tuple(xs))
        rnn_on_cuda = device.type == "cuda" and _has_rnn(ep)
        if not rnn_on_cuda:
            ep = keep_rnns(ep)
    except Exception as e:  # noqa: BLE001
        raise TaskError("export_error", "torch.export: " + kbtask.one_line(e))
    if rnn_on_cuda:  # before keep_rnns' decompositions, which it would not use
        raise TaskError("compile_error", "AOTInductor: " + _RNN_ON_CUDA)
    # Export may run forward; put buffers (batch-norm statistics) back.
    del xs
    phase("export")
    model = fresh_model()
    state = {k: v for k, v in model.state_dict().items()}
    phase("model_and_inputs")

    os.makedirs(out_dir, exist_ok=True)
    tmp = out + ".tmp.pt2"
    tol = task.get("tolerance", {"atol": 1e-2, "rtol": 1e-2})
    notes = []
    modes = [True, False] if weights == "external" else [False]
    diff = None
    for external in modes:
        try:
            _build(ep, tmp, external)
        except Exception as e:  # noqa: BLE001
            raise TaskError("compile_error", "AOTInductor: " + kbtask.one_line(e))
        phase("compile")
        try:
            diff = _check(tmp, external, state, mod, task, model, device, tol)
            used = "external" if external else "in_package"
            phase("check")
            break
        except Exception as e:  # noqa: BLE001
            msg = e.message if isinstance(e, TaskError) else kbtask.one_line(e)
            notes.append(("external weights: " if external else "") + msg)
            phase("check")
            if external:
                model = fresh_model()
                state = {k: v for k, v in model.state_dict().items()}
                continue
            raise TaskError(e.kind if isinstance(e, TaskError) else "compile_error", "; ".join(notes))
    os.replace(tmp, out)
    try:
        os.remove(_memo_path(bundle, arch))
    except OSError:
        pass
    seconds = time.time() - start
    task = kbtask.read_task(bundle)  # re-read: another arch may have been added meanwhile
    task.setdefault("compiled", {})[arch] = {
        "file": f"compiled/{arch}.pt2",
        "arch": arch,
        "sha256": kbtask.sha256_file(out),
        "size_bytes": os.path.getsize(out),
        "torch_version": kbtask.torch_version(),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "weights": used,
        "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "build_seconds": round(seconds, 1),
        "phases": phases,
        "max_abs_diff_vs_eager": diff,
        "notes": notes,
    }
    kbtask.write_json(os.path.join(bundle, "task.json"), task)
    return {"status": "ok", "arch": arch, "weights": used, "max_abs_diff": diff, "notes": notes, "phases": phases}


class _Timeout(BaseException):
    """A build's time limit: not an Exception, so that no `except Exception`
    inside a build (the external-weights fallback) swallows it."""


def _alarm(signum, frame):
    raise _Timeout()


def build_one(bundle, device, a, timeout_s):
    """One bundle's result line: built, cached or failed (never raises but
    for a stop)."""
    start = time.time()
    result = {"dir": bundle}
    try:
        result["id"] = kbtask.read_task(bundle)["id"]
        signal.alarm(max(0, timeout_s))
        result.update(build(bundle, device, a.force, a.weights, timeout_s))
    except _Timeout:
        result.update(status="failed", reason="timeout", message=f"the build took over {timeout_s} s")
    except TaskError as e:
        result.update(status="failed", reason=e.kind, message=e.message)
    except Exception as e:  # noqa: BLE001
        result.update(status="failed", reason="internal_error", message=kbtask.one_line(e))
    finally:
        signal.alarm(0)
        tmp = os.path.join(bundle, "compiled", arch_of(device) + ".pt2.tmp.pt2")
        if os.path.exists(tmp):
            os.remove(tmp)
        # The next bundle starts with this one's memory given back (the
        # processes building at once share the GPU).
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if result["status"] == "failed" and not result.get("remembered"):
        message = result.get("message", "")
        if kbtask.gpu_out_of_memory_text(message):
            # Says nothing about the task when others share the GPU: kbsynth
            # builds these again alone.
            result["reason"] = "out_of_memory"
            result["retry_alone"] = True
        elif device.type == "cuda" and "API call failed" in message:
            # AOTInductor's runtime hides the CUDA error (on stderr) behind
            # this; beside other builds it was an out of memory when seen.
            result["retry_alone"] = True
        if result["reason"] != "internal_error" and not result.get("retry_alone"):
            # What kbprof falls back to (docs/kbprof.md "Baselines"): checked
            # now, so that the task says whether it has a compile figure.
            try:
                signal.alarm(max(0, timeout_s))
                result["python_compile"] = python_compile_check(bundle, device)
            except _Timeout:
                result["python_compile"] = {"status": "failed", "reason": "timeout",
                                            "message": f"torch.compile took over {timeout_s} s"}
            finally:
                signal.alarm(0)
        if result["reason"] != "internal_error":
            remember(bundle, result, device, timeout_s)
            record_compile_baseline(bundle, arch_of(device), result)
    elif result["status"] in ("ok", "cached"):
        record_compile_baseline(bundle, arch_of(device), result)
    result["seconds"] = round(time.time() - start, 3)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--weights", choices=["external", "in_package"], default="external")
    ap.add_argument("bundles", nargs="+", help="bundle folders, or - to read {\"dir\": ...} lines from stdin")
    a = ap.parse_args()
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        kbtask.log("baseline.py: no CUDA device")
        return 3
    timeout_s = int(float(os.environ.get("KB_BASELINE_TIMEOUT", "900")))
    # Compared with eager in full float32, as kbcheck's reference computes
    # (kbtask sets it on import): with TF32 convolutions (PyTorch's default for
    # cuDNN) eager and the package pick different algorithms, and over a deep
    # network they differ by more than the task's tolerance (on the H200:
    # ResNet101 0.069, EfficientNetB2 0.90).
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    signal.signal(signal.SIGALRM, _alarm)
    if a.bundles == ["-"]:
        hello = {"pid": os.getpid()}
        if device.type == "cuda":  # the pool fits its builds in the device's memory
            hello["device_memory"] = torch.cuda.get_device_properties(device).total_memory
        kbtask.emit({"hello": hello})
        while True:  # the pool sends the next bundle after this one's line
            line = sys.stdin.readline()
            if not line:
                break
            if line.strip():
                kbtask.emit(build_one(kbtask.json.loads(line)["dir"], device, a, timeout_s))
        return 0
    for bundle in a.bundles:
        kbtask.emit(build_one(bundle, device, a, timeout_s))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # kbsynth's stop (it passes SIGINT on): no traceback, no result line
        sys.stderr.flush()
        os._exit(130)
