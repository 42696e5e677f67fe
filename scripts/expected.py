#!/usr/bin/env python3
"""What Python says a bundle computes, for `kbsynth check` to compare the C++
side against: for each seed, the inputs made the Python way (get_inputs()
itself, or the spec), the outputs of the original nn.Module from model.py
(with reference.pt's weights, which the init seed drew; eager), and optionally timings of `model(*x)` and
`torch.compile(model)(*x)`.

    expected.py --device cpu --seeds 0,1,2 [--time ITERS] --out DIR BUNDLE...

Writes DIR/<n>.pt per bundle (n = position on the command line): a
TorchScript module whose buffers are in_s<seed>_<i> (tensor inputs, CPU)
and out_s<seed>_<i> (outputs, CPU). One result line per bundle on stdout:
    {"dir": ..., "file": ".../0.pt", "status": "ok",
     "eager_ms": 0.51, "compile_ms": 0.32}       (times only with --time)
Timing: `warmup` calls, then `repeats` rounds of ITERS back-to-back calls
between device synchronisations; the median round's mean per call, in ms.
The C++ side (kbsynth check --time) times the same way.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbtask  # noqa: E402
from kbtask import TaskError, torch  # noqa: E402


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_ms(fn, device, warmup, iters, repeats):
    for _ in range(warmup):
        fn()
    sync(device)
    rounds = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync(device)
        rounds.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(rounds)


def run(bundle, device, seeds, out_path, iters, warmup, repeats):
    task = kbtask.read_task(bundle)
    mod = kbtask.load_program(os.path.join(bundle, "model.py"))
    model = kbtask.model_with_weights(mod, task, kbtask.bundle_weights(bundle, device), device)
    holder = torch.nn.Module()
    for s in seeds:
        xs = kbtask.bundle_inputs(mod, task, s, device)
        with torch.no_grad():
            outs = kbtask.flatten_outputs(model(*xs))
        for i, x in enumerate(t for t in xs if isinstance(t, torch.Tensor)):
            holder.register_buffer(f"in_s{s}_{i}", x.detach().cpu().contiguous())
        for i, o in enumerate(outs):
            holder.register_buffer(f"out_s{s}_{i}", o.detach().cpu().contiguous())
    torch.jit.script(holder).save(out_path)
    result = {"status": "ok", "file": out_path}
    if iters > 0:
        xs = kbtask.bundle_inputs(mod, task, seeds[0], device)
        with torch.no_grad():
            result["eager_ms"] = time_ms(lambda: model(*xs), device, warmup, iters, repeats)
            compiled = torch.compile(model)
            result["compile_ms"] = time_ms(lambda: compiled(*xs), device, warmup, iters, repeats)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seeds", type=lambda v: [int(x) for x in v.split(",")], default=[0, 1, 2],
                    help="comma-separated, e.g. 0,1,2")
    ap.add_argument("--time", type=int, default=0, metavar="ITERS")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("bundles", nargs="+")
    a = ap.parse_args()
    device = torch.device(a.device)
    os.makedirs(a.out, exist_ok=True)
    for n, bundle in enumerate(a.bundles):
        result = {"dir": bundle}
        try:
            result.update(run(bundle, device, a.seeds, os.path.join(a.out, f"{n}.pt"), a.time, a.warmup,
                              a.repeats))
        except TaskError as e:
            result.update(status="failed", reason=e.kind, message=e.message)
        except Exception as e:  # noqa: BLE001
            result.update(status="failed", reason="internal_error", message=kbtask.one_line(e))
        kbtask.emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
