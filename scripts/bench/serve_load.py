#!/usr/bin/env python3
"""kbserve's throughput benchmark (issue 36): many concurrent clients send
evaluations of known solutions through one kbserve; printed, not asserted:
evaluations per GPU-hour (per CPU-hour on a CPU run) with the full trust
boundary, the GPU (or CPU slot) busy fraction from the server's /metrics,
p50/p99 latency, and, for comparison, the same evaluations run one after
another with kbprof (GPU) or kbcheck (CPU), which is what a user without the
service runs.

    python3 scripts/bench/serve_load.py --tasks DIR --solutions DIR [--device cuda]
        [--clients 64] [--rounds 4] [--kbserve build/tools/kbserve/kbserve] [--sequential 1]

SOLUTIONS holds DIR/<task folder>/forward.cpp (kbrollout --replay's layout);
<task folder> is the folder under TASKS with the task's task.json. Every
round submits each solution once more, with a fresh idempotency key: the
build cache answers the builds after the first round, as it does in RL
where many samples repeat; verify and profile run every time. Needs the
kbserve package (PYTHONPATH=python or pip install -e .).
"""
import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from kbserve.client import AsyncClient, evaluation_request  # noqa: E402
from kbserve.server import LocalServer  # noqa: E402


def solutions(tasks: Path, sols: Path):
    out = []
    for fwd in sorted(sols.rglob("forward.cpp")):
        folder = fwd.parent.relative_to(sols).parts[0]
        task_json = tasks / folder / "task.json"
        if not task_json.exists():
            sys.exit(f"serve_load: {fwd.parent}: no task folder {tasks / folder}")
        files = {str(p.relative_to(fwd.parent)): p.read_text() for p in fwd.parent.rglob("*")
                 if p.is_file() and p.suffix in (".cpp", ".cu", ".h", ".cuh", ".hpp")}
        out.append((json.loads(task_json.read_text())["id"], tasks / folder, fwd.parent, files))
    return out


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


async def load(url, work, clients, device, stages):
    queue = asyncio.Queue()
    for item in work:
        queue.put_nowait(item)
    latencies, statuses = [], {}

    async def one_client(k):
        async with AsyncClient(url, timeout=3600) as c:
            while True:
                try:
                    key, task, files = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                t0 = time.monotonic()
                ev = await c.evaluate_request(evaluation_request(task, files, device=device, stages=stages,
                                                                 idempotency_key=key), timeout=3600)
                latencies.append(time.monotonic() - t0)
                statuses[ev.get("status")] = statuses.get(ev.get("status"), 0) + 1

    await asyncio.gather(*(one_client(k) for k in range(clients)))
    return latencies, statuses


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", required=True, type=Path)
    ap.add_argument("--solutions", required=True, type=Path)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--kbserve", default=str(ROOT / "build/tools/kbserve/kbserve"))
    ap.add_argument("--kbprof", default=str(ROOT / "build/tools/kbprof/kbprof"))
    ap.add_argument("--kbcheck", default=str(ROOT / "build/tools/kbcheck/kbcheck"))
    ap.add_argument("--cpu-slots", type=int, default=os.cpu_count())
    ap.add_argument("--sequential", type=int, default=1, help="rounds of the one-after-another comparison (0: none)")
    ap.add_argument("--serve-args", default="", help="more kbserve flags, space-separated")
    a = ap.parse_args()
    sols = solutions(a.tasks, a.solutions)
    if not sols:
        sys.exit("serve_load: no forward.cpp under " + str(a.solutions))
    stages = ["build", "verify", "profile"] if a.device == "cuda" else ["static", "build", "verify"]
    work = [(f"bench-{r}-{i}-{time.time_ns()}", task, files) for r in range(a.rounds)
            for i, (task, _, _, files) in enumerate(sols)]
    state = Path(tempfile.mkdtemp(prefix="kbserve-bench-"))
    extra = ["--gpus", "auto" if a.device == "cuda" else "none", "--queue-limit", str(max(256, 2 * a.clients))]
    extra += a.serve_args.split() if a.serve_args else []
    server = LocalServer(a.tasks, state / "state", binary=a.kbserve, cpu_slots=a.cpu_slots, extra_args=extra)
    url = server.start()
    try:
        t0 = time.monotonic()
        latencies, statuses = asyncio.run(load(url, work, a.clients, a.device, stages))
        wall = time.monotonic() - t0
        import urllib.request
        metrics = urllib.request.urlopen(url + "/metrics").read().decode()
    finally:
        server.stop()
    busy = metric(metrics, "kbserve_gpu_busy_fraction" if a.device == "cuda" else "kbserve_cpu_busy_fraction")
    gpus = int(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU ")) \
        if a.device == "cuda" else 0
    per = f"per GPU-hour ({gpus} GPUs)" if gpus else f"per hour on {a.cpu_slots} CPU slots"
    rate = len(latencies) / wall * 3600 / (gpus or 1)
    print(f"kbserve: {len(latencies)} evaluations ({len(sols)} solutions x {a.rounds} rounds, stages {','.join(stages)}) "
          f"from {a.clients} clients in {wall:.1f} s: {rate:.0f} {per}; busy fraction {busy:.2f}; "
          f"latency p50 {pct(latencies, .5):.2f} s, p99 {pct(latencies, .99):.2f} s; statuses {statuses}")
    if a.sequential:
        t0 = time.monotonic()
        n = 0
        for _ in range(a.sequential):
            for task, task_dir, sol_dir, _ in sols:
                cmd = ([a.kbprof, str(task_dir), str(sol_dir), "--json", os.devnull] if a.device == "cuda" else
                       [a.kbcheck, str(task_dir), str(sol_dir), "--device", "cpu", "--json", os.devnull])
                subprocess.run(cmd, capture_output=True)
                n += 1
        seq = time.monotonic() - t0
        tool = "kbprof" if a.device == "cuda" else "kbcheck"
        print(f"{tool} one after another: {n} evaluations in {seq:.1f} s: {n / seq * 3600 / (gpus or 1):.0f} "
              f"{'per GPU-hour' if gpus else 'per hour'}")


if __name__ == "__main__":
    main()
