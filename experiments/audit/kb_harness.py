#!/usr/bin/env python3
"""The KernelBench harness's own verdict on the audit's solutions.

    kb_harness.py --src KERNELBENCH_SRC [--claims .kb/audit/claims.json] [--kb .kb/kb-tasks]
                  [--out kb-harness.json] [--work DIR] [--only IDS] [--timeout S] [--deadline S]
                  [--num-correct-trials 5] [--num-perf-trials 100] [--resume] [--check-import]

For every solution of claims.json (extract.py), KernelBench's
`eval_kernel_against_ref(task file, model_new.py, measure_performance=True,
...)`, imported from KernelBench's source tree at --src (a checkout or a
`git archive` of github.com/ScalingIntelligence/KernelBench, kept outside
this tree: README.md), each in its own Python process, bounded by
--timeout and killed with its process group past it, so that a solution
that hangs, crashes the interpreter or wedges its CUDA context stops only
itself. Nothing of KernelBench is copied here: the child imports it from
--src (`kernelbench.eval` from src/, the package layout since 2025-11, or
`src.eval`, the older one).

Writes --out (after each solution, so a run cut short keeps what it did):
  {"format": "kb-audit-kb-harness", "status": "ok" | "skipped", "reason",
   "harness": {src, commit, module, parameters, stand_ins}, "device",
   "settings": {...}, "solutions": {ID: {...}}}
and per solution: status (correct, incorrect, runtime_error,
compile_error, eval_raised, timeout, crash, harness_error, not_run), compiled,
correctness, runtime and ref_runtime (as KernelBench gives them: the mean
of its timed trials in ms, `timing.get_timing_stats`; ref_runtime only from
versions that time the reference, -1 or absent otherwise), speedup
(ref_runtime / runtime), excessive_speedup (KernelBench's own flag),
error (the first line of what failed), seconds, log (the child's output).

Without CUDA (torch.cuda.is_available() false; the harness asserts it) the
solutions are not run: the file says "skipped", and --check-import (always
done then) shows that KernelBench's eval imports from --src.

KernelBench's package imports its LLM clients (openai, litellm, dotenv,
together, anthropic, google.generativeai, ...), which eval never calls;
where one is not installed, a stand-in module is put in its place (named in
harness.stand_ins). pydantic (its result class) gets a minimal stand-in too
when missing; carry the real one as wheels to compare field by field.
"""
import argparse
import datetime
import importlib
import importlib.util
import inspect
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import types

# Modules KernelBench imports at package or eval import time for its LLM
# front end (src/utils.py, src/kernelbench/utils.py), never used by
# eval_kernel_against_ref.
LLM_MODULES = ["dotenv", "openai", "litellm", "together", "anthropic", "google.generativeai",
               "transformers", "tqdm", "requests"]


def first_line(s, n=300):
    s = str(s or "").strip()
    s = s.splitlines()[0] if s else ""
    return s if len(s) <= n else s[: n - 3] + "..."


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- the child

class _StandIn(types.ModuleType):
    """A module whose every attribute is a class that refuses to be used."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        qual = f"{self.__name__}.{name}"

        def refuse(*a, **k):
            raise RuntimeError(f"{qual}: a stand-in of kb_harness.py (the module is not installed)")
        cls = type(name, (), {"__init__": refuse, "__module__": self.__name__})
        setattr(self, name, cls)
        return cls


def _missing(name):
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def _pydantic_stand_in():
    """BaseModel as KernelBench's result class uses it: keyword fields over
    class defaults (each instance its own copy)."""
    import copy
    mod = types.ModuleType("pydantic")

    class BaseModel:
        def __init__(self, **kw):
            for k in getattr(type(self), "__annotations__", {}):
                if k not in kw and hasattr(type(self), k):
                    setattr(self, k, copy.deepcopy(getattr(type(self), k)))
            for k, v in kw.items():
                setattr(self, k, v)

        def dict(self):
            return dict(vars(self))
        model_dump = dict
    mod.BaseModel = BaseModel
    return mod


def install_stand_ins(force=()):
    """Stand-ins for the LLM clients (and pydantic) that are not installed."""
    done = []
    for name in LLM_MODULES:
        if name not in force and not _missing(name):
            continue
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            sub = ".".join(parts[:i])
            if sub in sys.modules and sub not in force:
                continue
            if i < len(parts) and not _missing(sub) and sub not in force:
                importlib.import_module(sub)  # a real namespace package (google): keep it
                continue
            m = _StandIn(sub)
            m.__path__ = []  # a package, so that submodules resolve
            if sub == "dotenv":
                m.load_dotenv = lambda *a, **k: False
            sys.modules[sub] = m
            if i > 1:
                setattr(sys.modules[".".join(parts[: i - 1])], parts[i - 1], m)
        done.append(name)
    if "pydantic" in force or _missing("pydantic"):
        sys.modules["pydantic"] = _pydantic_stand_in()
        done.append("pydantic")
    return done


def import_harness(src):
    """KernelBench's eval module from its source tree: (module, its name, stand-ins).
    KB_HARNESS_FORCE_STAND_INS=pydantic,openai,... puts stand-ins in place of
    installed modules too (to test them)."""
    src = os.path.abspath(src)
    force = tuple(filter(None, os.environ.get("KB_HARNESS_FORCE_STAND_INS", "").split(",")))
    stand_ins = install_stand_ins(force)
    if os.path.isfile(os.path.join(src, "src", "kernelbench", "eval.py")):
        sys.path.insert(0, os.path.join(src, "src"))
        name = "kernelbench.eval"
    elif os.path.isfile(os.path.join(src, "src", "eval.py")):
        sys.path.insert(0, src)
        name = "src.eval"
    else:
        raise FileNotFoundError(f"{src}: neither src/kernelbench/eval.py nor src/eval.py (a KernelBench source tree?)")
    return importlib.import_module(name), name, stand_ins


def jsonable(x):
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, BaseException):
        return f"{type(x).__name__}: {x}"
    return str(x)


def child(a):
    """One solution: KernelBench's eval, its result as JSON in a.result."""
    out = {"status": "harness_error", "compiled": None, "correctness": None, "runtime": None,
           "ref_runtime": None, "speedup": None, "excessive_speedup": None, "error": None, "metadata": None}
    try:
        ev, _, _ = import_harness(a.src)
        import torch
        ref_src = open(a.task).read()
        sol_src = open(a.solution).read()
    except BaseException as e:
        out["error"] = f"{type(e).__name__}: {first_line(e)}"
        out["traceback"] = traceback.format_exc()[-4000:]
        with open(a.result, "w") as f:
            json.dump(out, f, indent=1)
        return 0
    try:
        want = {
            "seed_num": a.seed, "num_correct_trials": a.num_correct_trials, "num_perf_trials": a.num_perf_trials,
            "measure_performance": True, "verbose": False, "build_dir": a.build_dir,
            "device": torch.device(f"cuda:{a.cuda_device}"),
        }
        params = inspect.signature(ev.eval_kernel_against_ref).parameters
        kwargs = {k: v for k, v in want.items() if k in params}
        res = ev.eval_kernel_against_ref(ref_src, sol_src, **kwargs)
        if res is None:  # KernelBench: a lock-file error while building; it asks for a retry
            out["error"] = "eval_kernel_against_ref returned None (a build lock-file error: KernelBench asks for a retry)"
        else:
            md = jsonable(getattr(res, "metadata", {}) or {})
            out.update(compiled=bool(getattr(res, "compiled", False)), correctness=bool(getattr(res, "correctness", False)),
                       metadata=md)
            rt, ref = getattr(res, "runtime", None), getattr(res, "ref_runtime", None)
            out["runtime"] = rt if isinstance(rt, (int, float)) and rt > 0 else None
            out["ref_runtime"] = ref if isinstance(ref, (int, float)) and ref > 0 else None
            if out["runtime"] and out["ref_runtime"]:
                out["speedup"] = out["ref_runtime"] / out["runtime"]
            out["excessive_speedup"] = bool(md.get("excessive_speedup")) if "excessive_speedup" in md else None
            if not out["compiled"]:
                out["status"] = "compile_error"
                out["error"] = first_line(md.get("compilation_error") or md.get("compilation_error_name"))
            elif not out["correctness"]:
                if md.get("runtime_error") or md.get("runtime_error_name"):
                    out["status"] = "runtime_error"
                    out["error"] = first_line(md.get("runtime_error") or md.get("runtime_error_name"))
                else:
                    out["status"] = "incorrect"
                    out["error"] = first_line(md.get("correctness_issue") or md.get("max_difference"))
            else:
                out["status"] = "correct"
                if md.get("error_during_performance"):
                    out["error"] = "timing: " + first_line(md["error_during_performance"])
    except BaseException as e:  # eval_kernel_against_ref raised (the solution's error escaped it)
        # KernelBench's scripts/eval_from_generations.py records this as
        # compiled=False, correctness=False ("Last level catch")
        out.update(status="eval_raised", compiled=False, correctness=False)
        out["error"] = f"{type(e).__name__}: {first_line(e)}"
        out["traceback"] = traceback.format_exc()[-4000:]
    with open(a.result, "w") as f:
        json.dump(out, f, indent=1)
    return 0


# --------------------------------------------------------------- the parent

def harness_commit(src):
    """SRC/COMMIT (written beside a `git archive`), else the commit of a
    checkout whose top is SRC itself (not of a repository SRC lies in)."""
    try:
        with open(os.path.join(src, "COMMIT")) as f:
            return f.read().strip() or None
    except OSError:
        pass
    try:
        top = subprocess.run(["git", "-C", src, "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=20)
        if top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(src):
            p = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=20)
            return p.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def check_import(a):
    """Import KernelBench's eval in a fresh process (CPU is enough): its
    module name, the parameters of eval_kernel_against_ref, the stand-ins."""
    code = ("import json, sys, inspect; sys.path.insert(0, sys.argv[1]); import kb_harness as k; "
            "m, name, st = k.import_harness(sys.argv[2]); "
            "print(json.dumps({'module': name, 'parameters': list(inspect.signature(m.eval_kernel_against_ref).parameters),"
            " 'result_fields': sorted(getattr(m.KernelExecResult, '__annotations__', {})), 'stand_ins': st}))")
    p = subprocess.run([a.python, "-c", code, os.path.dirname(os.path.abspath(__file__)), a.src],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not p.stdout.strip():
        last = [l for l in (p.stderr or "").splitlines() if l.strip()][-1:] or ["no output"]
        raise RuntimeError(f"importing KernelBench's eval from {a.src} failed (exit {p.returncode}): {first_line(last[0])}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def cuda_state(python):
    code = "import torch, json; ok = torch.cuda.is_available(); print(json.dumps({'cuda': ok, 'device': torch.cuda.get_device_name(0) if ok else None, 'torch': torch.__version__}))"
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError) as e:
        return {"cuda": False, "device": None, "torch": None, "error": str(e)}


def run_one(a, sid, task, solution):
    """KernelBench's eval of one solution in its own process group, bounded."""
    work = os.path.join(a.work, sid)
    os.makedirs(os.path.join(work, "build"), exist_ok=True)
    result, log = os.path.join(work, "result.json"), os.path.join(work, "log.txt")
    if os.path.exists(result):
        os.remove(result)
    cmd = [a.python, os.path.abspath(__file__), "--child", "--src", a.src, "--task", task, "--solution", solution,
           "--result", result, "--build-dir", os.path.join(work, "build"), "--seed", str(a.seed),
           "--num-correct-trials", str(a.num_correct_trials), "--num-perf-trials", str(a.num_perf_trials),
           "--cuda-device", str(a.cuda_device)]
    t0 = time.time()
    with open(log, "w") as lf:
        p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, cwd=work)
        try:
            rc = p.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            try:  # the whole group: ninja, nvcc and anything the solution started
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()
    secs = round(time.time() - t0, 1)
    entry = None
    if rc is not None:
        try:
            with open(result) as f:
                entry = json.load(f)
        except (OSError, ValueError):
            entry = None
    if entry is None:
        try:
            with open(log, errors="replace") as f:
                tail = [l for l in f.read().strip().splitlines() if l.strip()][-1:]
        except OSError:
            tail = []
        if rc is None:
            status, err = "timeout", f"no verdict within {a.timeout} s (killed)"
        elif rc < 0:
            status, err = "crash", f"the process died of {signal.Signals(-rc).name}"
        else:
            status, err = "crash", f"the process exited {rc} without a verdict"
        if tail:
            err += f"; last output: {first_line(tail[0], 200)}"
        entry = {"status": status, "compiled": None, "correctness": None, "runtime": None, "ref_runtime": None,
                 "speedup": None, "excessive_speedup": None, "error": err}
    entry.update(id=sid, task_file=os.path.relpath(task, a.kb) if task.startswith(a.kb) else task,
                 seconds=secs, log=log)
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", ".."))
    ap.add_argument("--src", default=os.environ.get("KB_HARNESS_SRC", os.path.join(root, ".kb", "kernelbench-src")),
                    help="KernelBench's source tree [$KB_HARNESS_SRC, else .kb/kernelbench-src]")
    ap.add_argument("--claims", default=os.path.join(root, ".kb", "audit", "claims.json"))
    ap.add_argument("--audit", default="", help="the solutions' folder [the folder of --claims]")
    ap.add_argument("--kb", default=os.path.join(root, ".kb", "kb-tasks"), help="the task files: level1..3/*.py")
    ap.add_argument("--out", default="kb-harness.json")
    ap.add_argument("--work", default="/tmp/kb-audit/kb-harness", help="per solution: build folder, log, result")
    ap.add_argument("--only", default="", help="comma-separated solution ids")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for one solution (build, checks, timing) [300]")
    ap.add_argument("--deadline", type=float, default=0, help="no solution starts after S seconds (0: none)")
    ap.add_argument("--num-correct-trials", type=int, default=5, help="[5, KernelBench's eval_from_generations]")
    ap.add_argument("--num-perf-trials", type=int, default=100, help="[100, likewise]")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cuda-device", type=int, default=0)
    ap.add_argument("--python", default=sys.executable, help="the interpreter with torch [this one]")
    ap.add_argument("--resume", action="store_true", help="keep the verdicts --out already holds; run the rest")
    ap.add_argument("--check-import", action="store_true", help="only import KernelBench's eval and say what it offers")
    ap.add_argument("--without-cuda", action="store_true",
                    help="run the solutions even where torch sees no CUDA (only to test the process handling with a stand-in harness)")
    # the child's own arguments
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--task", help=argparse.SUPPRESS)
    ap.add_argument("--solution", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--build-dir", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)

    a.src, a.kb, a.work, a.out = (os.path.abspath(p) for p in (a.src, a.kb, a.work, a.out))
    if not os.path.isdir(a.src):
        print(f"kb_harness.py: no KernelBench source tree at {a.src} (--src, KB_HARNESS_SRC; README.md says how to get it)",
              file=sys.stderr)
        return 2
    try:
        claims = json.load(open(a.claims))
    except (OSError, ValueError) as e:
        print(f"kb_harness.py: {a.claims}: {e}", file=sys.stderr)
        return 2
    # Absolute: each solution's child runs in its own work folder (the first GPU run, 2026-12-06,
    # lost every verdict to a relative --audit).
    audit = os.path.abspath(a.audit or os.path.dirname(os.path.abspath(a.claims)))
    only = set(filter(None, a.only.split(",")))
    sols = [c for c in claims.get("solutions", []) if not only or c["id"] in only]
    unknown = only - {c["id"] for c in sols}
    if unknown:
        print(f"kb_harness.py: --only names no solution of claims.json: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2

    try:
        info = check_import(a)
    except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as e:
        print(f"kb_harness.py: {e}", file=sys.stderr)
        return 3
    info.update(src=a.src, commit=harness_commit(a.src))
    print(f"kb_harness.py: KernelBench's {info['module']}.eval_kernel_against_ref at {info['commit'] or '(commit unknown)'}; "
          f"parameters: {', '.join(info['parameters'])}; stand-ins: {', '.join(info['stand_ins']) or 'none'}")
    if a.check_import:
        print(json.dumps(info, indent=1))
        return 0

    state = cuda_state(a.python)
    settings = {"num_correct_trials": a.num_correct_trials, "num_perf_trials": a.num_perf_trials, "seed": a.seed,
                "measure_performance": True, "timeout": a.timeout, "deadline": a.deadline,
                "timing_method": "cuda_event" if "timing_method" in info["parameters"] else None,
                "check_for_excessive_speedup": True if "check_for_excessive_speedup" in info["parameters"] else None,
                "torch": state.get("torch")}
    doc = {"format": "kb-audit-kb-harness", "made_at": now(), "status": "ok", "reason": None, "harness": info,
           "device": state.get("device"), "settings": settings, "claims": os.path.abspath(a.claims), "solutions": {}}
    if a.resume:
        try:
            old = json.load(open(a.out))
            if old.get("status") == "ok":
                doc["solutions"] = {k: v for k, v in (old.get("solutions") or {}).items()
                                    if v.get("status") not in ("not_run", "timeout", "crash", "harness_error", "skipped")}
        except (OSError, ValueError):
            pass

    def write():
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, a.out)

    if not state.get("cuda") and not a.without_cuda:
        doc["status"] = "skipped"
        doc["reason"] = ("no CUDA: torch.cuda.is_available() is false here (KernelBench's eval asserts CUDA); "
                         "the harness imported, no solution was run" + (f" ({state['error']})" if state.get("error") else ""))
        doc["solutions"] = {c["id"]: {"id": c["id"], "status": "skipped"} for c in sols}
        write()
        print(f"kb_harness.py: no CUDA: skipped ({len(sols)} solutions not run); wrote {a.out}")
        return 0

    t0 = time.time()
    os.makedirs(a.work, exist_ok=True)
    for c in sols:
        sid = c["id"]
        if sid in doc["solutions"]:
            print(f"  {sid}: {doc['solutions'][sid]['status']} (kept)")
            continue
        task = os.path.join(a.kb, c.get("task_file") or f"level{c['level']}/{c['task']}.py")
        solution = os.path.join(audit, sid, "model_new.py")
        if a.deadline and time.time() - t0 >= a.deadline:
            entry = {"id": sid, "status": "not_run", "error": f"the deadline ({a.deadline:.0f} s) passed before this solution"}
        elif not os.path.isfile(task) or not os.path.isfile(solution):
            entry = {"id": sid, "status": "not_run",
                     "error": "no " + (task if not os.path.isfile(task) else solution)}
        else:
            entry = run_one(a, sid, task, solution)
        doc["solutions"][sid] = entry
        doc["seconds"] = round(time.time() - t0, 1)
        write()
        sp = entry.get("speedup")
        print(f"  {sid}: {entry['status']}" + (f" {sp:.2f}x" if sp else "")
              + (f" ({entry['error']})" if entry.get("error") and entry["status"] != "correct" else ""), flush=True)
    counts = {}
    for e in doc["solutions"].values():
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    doc["counts"] = counts
    write()
    print(f"kb_harness.py: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
