#!/usr/bin/env python3
"""Lists the degenerate problems of a problem set without importing it:
for each KernelBench-style file, the model (init seed 42) runs on
get_inputs() of seeds 0 and 1 and scripts/degenerate.py judges the outputs,
as `kbsynth import` does at capture (docs/kbsynth.md, "Degenerate tasks").
A survey, not a capture: no bundle is written and the inputs are
get_inputs' own.

    degenerate_scan.py PATH... [--timeout S] [--memory-gib G] [--device D]

PATH: problem files, or folders of them (searched below, level folders
included). Each problem runs in a child process of its own under the time
limit (default 60 s) and an address-space limit (default 8 GiB; the CPU),
so one that is too large for this machine is reported `skipped`, not
fatal. One JSON line per problem on stdout:
    {"path", "status": "ok"|"skipped"|"failed", "degenerate": {...}|null,
     "message", "seconds"}
"""

import json
import os
import resource
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import degenerate  # noqa: E402
import kbtask  # noqa: E402
from kbtask import TaskError, torch  # noqa: E402


def problems(paths):
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, _, files in os.walk(p):
                found += [os.path.join(root, f) for f in files if f.endswith(".py") and f != "__init__.py"]
            yield from sorted(found)
        else:
            yield p


def judge(path, device):
    """task.json's `degenerate` of the problem at `path`, or None."""
    mod = kbtask.load_program(path)
    model = kbtask.build_model(mod, kbtask.DEFAULT_INIT_SEED, device=device).to(device)
    outs = []
    for seed in (0, 1):
        xs = kbtask.to_device(kbtask.python_inputs(mod, seed, device), device)
        with torch.no_grad():
            try:
                outs.append(kbtask.flatten_outputs(model(*xs)))
            except TaskError:
                raise
            except Exception as e:  # noqa: BLE001
                if "can't allocate memory" in str(e):
                    raise MemoryError(kbtask.one_line(e))
                raise TaskError("forward_error", kbtask.one_line(e))
        del xs
    return degenerate.check(outs[0], outs[1])


def run_child(path, device, timeout_s, memory_bytes, wfd):
    signal.alarm(timeout_s)
    if device.type == "cpu":
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        result = {"status": "ok", "degenerate": judge(path, device)}
    except TaskError as e:
        result = {"status": "failed", "message": f"{e.kind}: {e.message}"}
    except MemoryError:
        result = {"status": "skipped", "message": f"over {memory_bytes / 2**30:g} GiB"}
    except RuntimeError as e:  # torch's allocator past RLIMIT_AS
        text = kbtask.one_line(e)
        big = "memory" in text.lower() or "alloc" in text.lower()
        result = {"status": "skipped" if big else "failed", "message": text}
    os.write(wfd, json.dumps(result).encode())
    os._exit(0)


def main():
    argv, opts = sys.argv[1:], {"--timeout": "60", "--memory-gib": "8", "--device": "cpu"}
    paths = []
    while argv:
        a = argv.pop(0)
        if a in opts and argv:
            opts[a] = argv.pop(0)
        elif a.startswith("-"):
            sys.stderr.write(__doc__)
            return 2
        else:
            paths.append(a)
    if not paths:
        sys.stderr.write(__doc__)
        return 2
    device = torch.device(opts["--device"])
    timeout_s, memory = int(opts["--timeout"]), int(float(opts["--memory-gib"]) * 2**30)
    torch.set_num_threads(int(os.environ.get("KB_TORCH_THREADS", "1")))
    for path in problems(paths):
        start = time.time()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            run_child(path, device, timeout_s, memory, w)
        os.close(w)
        data = b""
        while chunk := os.read(r, 1 << 16):
            data += chunk
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if data:
            result = json.loads(data)
        elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
            result = {"status": "skipped", "message": f"over {timeout_s} s"}
        else:
            result = {"status": "skipped", "message": f"the child ended without a result (status {status})"}
        line = {"path": path, "status": result["status"], "degenerate": result.get("degenerate"),
                "message": result.get("message"), "seconds": round(time.time() - start, 2)}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
