#!/usr/bin/env python3
"""kbserve's throughput benchmark (issue 36): many concurrent clients send
evaluations of known solutions through one kbserve; printed, not asserted:
evaluations per GPU-hour (per CPU-hour on a CPU run) with the full trust
boundary, the GPU (or CPU slot) busy fraction from the server's /metrics,
p50/p99 latency, and, for comparison, the same evaluations run one after
another with kbprof (GPU) or kbcheck (CPU), which is what a user without the
service runs.

    python3 -u scripts/bench/serve_load.py --tasks DIR --solutions DIR [--device cuda]
        [--clients 64] [--rounds 4] [--seconds 200] [--kbserve build/tools/kbserve/kbserve]
        [--sequential 1] [--sequential-seconds 40] [--warmup-seconds 60] [--compile-baseline none]

SOLUTIONS holds DIR/<task folder>/forward.cpp (kbrollout --replay's layout);
<task folder> is the folder under TASKS with the task's task.json.

--compile-baseline (default none) is the torch.compile figure both sides
time: kbserve --compile-baseline and kbprof --compile-baseline, kbprof with
--no-aoti-build (kbserve never builds an AOTInductor package, so neither
does the comparison). `aoti` needs tasks imported with their packages
(kbsynth import --compiled cuda); `auto` and `python` run torch.compile in
Python the first time per task (the warm-up's).

Phases, each printed as it starts, with a progress line every --progress-s
seconds and a summary line as it ends:
  warm-up     each solution once, so that the build cache holds every library
              before the timed load (all rounds' copies of one solution
              submitted together would otherwise build it several times at
              once); on a GPU with the build and profile stages, from a few
              clients, so that each task's baselines are measured (torch.compile
              too, where asked) and stored in the baseline cache that kbserve
              and kbprof share: the load and the comparison then measure
              steady-state evaluations (a cache hit re-checks the eager figure
              only); on the CPU the static and build stages. Bounded by
              --warmup-seconds (0: none: the timed load starts cold)
  load        every solution once per round (--rounds), with a fresh
              idempotency key, from --clients clients; on a GPU the stages are
              build and profile (the profile checks the correctness seeds, as
              kbprof does), so every evaluation is verified and timed anew;
              the busy fraction is the server's over this phase (the share
              of time its GPUs were leased), and on a GPU machine beside it
              nvidia-smi's utilization.gpu sampled every 250 ms (the share of
              time a kernel ran: start-up, builds' waits and the harness's
              own steps are leased but not kernel time)
  sequential  the same solutions one after another with kbprof / kbcheck
              (--sequential rounds, within --sequential-seconds)
The whole run stays within --seconds (counted from the server's start):
the load stops taking new work when only the sequential phase's share is
left, and what is still running then is cancelled and not counted. SIGTERM
or SIGINT (`timeout`'s kill) ends the run the same way: the phase in
progress stops, the summary of what was measured so far is printed, and
the server is stopped (its outstanding evaluations cancelled). Every line
is flushed as it is written, so a killed run still leaves what it saw.
Needs the kbserve package (PYTHONPATH=python or pip install -e .).
"""
import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from kbserve.client import AsyncClient, evaluation_request, parse_metrics  # noqa: E402
from kbserve.server import LocalServer  # noqa: E402

T0 = time.monotonic()


SUMMARY = []  # the phases' summary lines, printed again at the very end


def say(*parts, summary=False):
    line = " ".join(str(p) for p in parts)
    print(f"[{time.monotonic() - T0:6.1f} s] {line}", flush=True)
    if summary:
        SUMMARY.append(line)


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


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def counts(d):
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])) or "none"


def baseline_cache_dir():
    """Where kbserve and kbprof (this process's children, with its
    environment) keep the baselines: lib/profile defaultBaselineCacheDir."""
    if os.environ.get("KB_BASELINE_CACHE"):
        return Path(os.environ["KB_BASELINE_CACHE"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "kernelbench-rl/baselines"
    if os.environ.get("HOME"):
        return Path(os.environ["HOME"]) / ".cache/kernelbench-rl/baselines"
    return Path(tempfile.gettempdir()) / "kernelbench-rl-baselines"


def baselines(prof):
    """Where a profile's baselines came from: 'cached', 'written' (measured
    and stored), 'not cached' (measured, not stored); None: no profile."""
    if not isinstance(prof, dict):
        return None
    return "cached" if prof.get("baselines_cached") else "written" if prof.get("baselines_written") else "not cached"


def stage_seconds(ev):
    """'build 0.1 verify 2.3 profile 4.0' from an evaluation's reports."""
    parts = []
    stages = (ev.get("report") or {}).get("stages") or {}
    for name in ("static", "build", "verify"):
        s = stages.get(name) or {}
        if not s.get("skipped", True) and s.get("seconds") is not None:
            parts.append(f"{name} {s['seconds']:.1f}")
    prof = ev.get("profile")
    if isinstance(prof, dict):
        if prof.get("seconds") is not None:
            parts.append(f"profile {prof['seconds']:.1f}")
        if prof.get("speedup_vs_eager") is not None:
            parts.append(f"(speedup vs eager {prof['speedup_vs_eager']:.2f})")
        where = baselines(prof)
        note = (prof.get("baseline_cache_note") or "").removeprefix("not cached: ") if where == "not cached" else ""
        note = f" ({note})" if note else ""
        reason = (prof.get("compile_baseline_reason") or "")[:120]
        compile_kind = prof.get("compile_baseline") or ("none" + (f" ({reason})" if reason else ""))
        parts.append(f"[baselines {where}{note}; compile {compile_kind}]")
    return " ".join(parts)


def keep_report(folder, prefix, task, doc):
    """One evaluation's JSON (the server's, or kbprof's report) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{prefix}-{task.replace('/', '_')}.json").write_text(json.dumps(doc, indent=1))


def profile_parts(prof):
    """Where one profile's seconds went, from its report (docs/kbprof.md):
    {part: seconds}; {} without a profile."""
    if not prof or not isinstance(prof.get("worker"), dict):
        return {}
    ph = prof["worker"].get("phases") or {}
    st = ph.get("startup") or {}
    timed = (ph.get("timing") or {}).get("timed") or {}
    parts = {"profile": prof.get("seconds"), "exec": ph.get("outside_main_seconds"),
             "startup": ph.get("startup_seconds"), "device": st.get("device_seconds"),
             "baselines": st.get("baselines_seconds"), "waited": ph.get("waited_seconds"),
             "seeds": ph.get("seeds_seconds"), "timing": ph.get("timing_seconds"),
             "commit": timed.get("commit_seconds"), "reference": prof.get("reference_seconds")}
    return {k: float(v) for k, v in parts.items() if isinstance(v, (int, float))}


def parts_line(samples):
    """'profile 2.31 exec 0.29 ...': each part's median over the samples."""
    keys = [k for k in ("profile", "exec", "waited", "startup", "device", "baselines", "seeds", "timing", "commit",
                        "reference") if any(k in s for s in samples)]
    return " ".join(f"{k} {pct([s[k] for s in samples if k in s], .5):.2f}" for k in keys)


class Phase:
    """What one phase of evaluations through the server measured."""

    def __init__(self, name, total, keep=None):
        self.name, self.total = name, total
        self.keep = keep  # a folder for every evaluation's JSON (--keep-reports), or None
        self.latencies, self.statuses = [], {}
        self.in_flight = 0
        self.started = time.monotonic()
        self.ended = None
        self.seen = set()  # (task, status) already printed
        self.busy0 = None  # (busy fraction, uptime) at the start
        self.busy = float("nan")  # over the phase
        self.exclusive0 = None  # (exclusive fraction, uptime) at the start (--gpu-share)
        self.exclusive = float("nan")  # over the phase: nan unless the server shares its GPUs
        self.stopped = ""  # why it ended before all its work was done
        self.baselines = {}  # profiles by where their baselines came from (baselines())
        self.utilization = float("nan")  # nvidia-smi's mean utilization.gpu over the phase (%)
        self.parts = []  # profile_parts() of each evaluation with a profile

    def wall(self):
        return (self.ended or time.monotonic()) - self.started

    def done(self):
        return len(self.latencies)

    def record(self, task, ev, latency, verbose):
        self.latencies.append(latency)
        if self.keep:
            keep_report(self.keep, f"{self.name}-{len(self.latencies):04d}", task, ev)
        st = ev.get("status") or ev.get("state") or "?"
        self.statuses[st] = self.statuses.get(st, 0) + 1
        where = baselines(ev.get("profile"))
        if where:
            self.baselines[where] = self.baselines.get(where, 0) + 1
        if parts := profile_parts(ev.get("profile")):
            self.parts.append(parts)
        if verbose or (task, st) not in self.seen:
            self.seen.add((task, st))
            msg = (ev.get("message") or "").replace("\n", " ")
            say(f"{self.name}: {task}: {st} in {latency:.1f} s (queued {ev.get('queue_seconds') or 0:.1f} s; "
                f"{stage_seconds(ev)})" + (f": {msg[:300]}" if msg and st != "ok" else ""))


class GpuUtilization:
    """nvidia-smi's utilization.gpu (the share of time a kernel ran), sampled
    every 250 ms while a phase runs: what the GPUs did, beside the server's
    busy fraction (the share of time they were leased)."""

    def __init__(self):
        self.samples, self.proc, self.reader = [], None, None

    def start(self):
        if not shutil.which("nvidia-smi"):
            return self
        self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                      "-lms", "250"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.samples.append(float(line.strip()))
            except ValueError:
                pass

    def stop(self):
        """The mean over the samples and GPUs, in percent (nan: none)."""
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.reader.join(timeout=5)
        return sum(self.samples) / len(self.samples) if self.samples else float("nan")


async def server_gauges(client, busy_name):
    m = parse_metrics(await client.metrics())
    g = lambda n: m.get((n, ()), float("nan"))  # noqa: E731
    return g(busy_name), g("kbserve_uptime_seconds"), g("kbserve_queue_depth"), g("kbserve_running")


async def exclusive_gauge(client):
    """(kbserve_gpu_exclusive_fraction, uptime): the share of time a GPU ran a
    profile's timed work alone (only served with --gpu-share above 1; nan
    otherwise)."""
    m = parse_metrics(await client.metrics())
    return m.get(("kbserve_gpu_exclusive_fraction", ()), float("nan")), m.get(("kbserve_uptime_seconds", ()), float("nan"))


def busy_between(a, b):
    """The busy fraction between two (fraction, uptime) samples."""
    (f0, u0), (f1, u1) = a, b
    return (f1 * u1 - f0 * u0) / (u1 - u0) if u1 > u0 else float("nan")


async def run_phase(phase, url, work, clients, device, stages, deadline, stop, busy_name, progress_s, per, verbose):
    """work: [(key, task, files)]; ends when all are done, at `deadline`
    (monotonic) or when `stop` is set; what is outstanding then is cancelled."""
    queue = asyncio.Queue()
    for item in work:
        queue.put_nowait(item)
    outstanding = {}  # evaluation id -> task
    async with AsyncClient(url, timeout=60) as admin:
        try:
            f, u, _, _ = await server_gauges(admin, busy_name)
            phase.busy0 = (f, u)
            phase.exclusive0 = await exclusive_gauge(admin)
        except Exception as e:  # noqa: BLE001
            say(f"{phase.name}: /metrics failed: {e!r}")

        async def one_client(k):
            async with AsyncClient(url, timeout=120) as c:
                while True:
                    try:
                        key, task, files = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    t0 = time.monotonic()
                    phase.in_flight += 1
                    ev_id = None
                    try:
                        # Submitted without waiting, so that its id is known
                        # (and cancelled) if the phase ends before it does.
                        ev = await c.submit_request(evaluation_request(task, files, device=device, stages=stages,
                                                                       idempotency_key=key))
                        ev_id = ev["id"]
                        outstanding[ev_id] = task
                        if ev.get("state") not in ("done", "cancelled"):
                            ev = await c.wait(ev_id, poll_s=20)
                    except asyncio.CancelledError:
                        phase.in_flight -= 1
                        raise  # still in `outstanding`: cancelled on the server below
                    except Exception as e:  # noqa: BLE001
                        ev = {"status": "client_error", "message": f"{type(e).__name__}: {e}"}
                    phase.in_flight -= 1
                    if ev_id:
                        outstanding.pop(ev_id, None)
                    phase.record(task, ev, time.monotonic() - t0, verbose)

        async def progress():
            while True:
                await asyncio.sleep(progress_s)
                line = (f"{phase.name}: {phase.done()}/{phase.total} done ({counts(phase.statuses)}), "
                        f"{phase.in_flight} in flight, {queue.qsize()} not sent; "
                        f"{phase.done() / max(phase.wall(), 1e-9) * 3600 / per[0]:.0f} {per[1]}")
                try:
                    f, u, q, r = await server_gauges(admin, busy_name)
                    if phase.busy0:
                        line += f"; busy {busy_between(phase.busy0, (f, u)):.2f}"
                    line += f" (server: queue {q:.0f}, running {r:.0f})"
                except Exception as e:  # noqa: BLE001
                    line += f" (/metrics failed: {e!r})"
                say(line)

        tasks = [asyncio.create_task(one_client(k)) for k in range(clients)]
        ticker = asyncio.create_task(progress())
        all_done = asyncio.ensure_future(asyncio.gather(*tasks, return_exceptions=True))
        stopper = asyncio.create_task(stop.wait())
        timeout = max(0.0, deadline - time.monotonic())
        await asyncio.wait([all_done, stopper], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        phase.ended = time.monotonic()
        if not all_done.done():
            phase.stopped = "stopped by a signal" if stop.is_set() else "its time ran out"
        ticker.cancel()
        stopper.cancel()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, ticker, stopper, all_done, return_exceptions=True)
        # What the server still runs for this phase: cancelled (queued ones at
        # once, running ones at their next stage boundary), never counted.
        if outstanding:
            ids = list(outstanding)
            res = await asyncio.gather(*(admin.cancel(i) for i in ids), return_exceptions=True)
            say(f"{phase.name}: cancelled {len(ids)} outstanding evaluation(s) "
                f"({sum(not isinstance(r, Exception) for r in res)} answered)")
        try:
            f, u, _, _ = await server_gauges(admin, busy_name)
            if phase.busy0:
                phase.busy = busy_between(phase.busy0, (f, u))
            if phase.exclusive0:
                phase.exclusive = busy_between(phase.exclusive0, await exclusive_gauge(admin))
        except Exception as e:  # noqa: BLE001
            say(f"{phase.name}: /metrics failed: {e!r}")


def phase_summary(phase, per, what):
    wall = phase.wall()
    line = (f"{phase.name}: {phase.done()} of {phase.total} evaluations ({what}) in {wall:.1f} s: "
            f"{phase.done() / max(wall, 1e-9) * 3600 / per[0]:.0f} {per[1]}; busy fraction {phase.busy:.2f}; "
            f"latency p50 {pct(phase.latencies, .5):.2f} s, p99 {pct(phase.latencies, .99):.2f} s; "
            f"statuses {counts(phase.statuses)}")
    if phase.exclusive == phase.exclusive:
        line += f"; timed work alone on the GPU {phase.exclusive:.2f} of the time (--gpu-share)"
    if phase.utilization == phase.utilization:
        line += f"; GPU utilization (nvidia-smi) {phase.utilization:.0f}%"
    if phase.baselines:
        line += f"; baselines {counts(phase.baselines)}"
    if phase.stopped:
        line += f"; NOT ALL DONE: {phase.stopped}"
    say(line, summary=True)
    if phase.parts:  # where a profile's seconds went (medians; exec: before main, waited: held before its GPU)
        say(f"{phase.name}: profile parts, median s over {len(phase.parts)}: {parts_line(phase.parts)}", summary=True)


async def sequential(a, sols, gpus, budget_end, stop):
    tool = "kbprof" if a.device == "cuda" else "kbcheck"
    say(f"sequential: {tool} one after another, {a.sequential} round(s) of {len(sols)}, "
        f"until {max(0.0, budget_end - time.monotonic()):.0f} s from now")
    t0 = t_last = time.monotonic()
    n, statuses, cache, why, parts = 0, {}, {}, "", []
    for _ in range(a.sequential):
        for task, task_dir, sol_dir, _ in sols:
            left = budget_end - time.monotonic()
            if stop.is_set() or left <= 1:
                why = "stopped by a signal" if stop.is_set() else "its time ran out"
                break
            with tempfile.NamedTemporaryFile(suffix=".json") as rep:
                # The same torch.compile figure as the server's, never an AOTInductor build.
                cmd = ([a.kbprof, str(task_dir), str(sol_dir), "--json", rep.name, "--compile-baseline",
                        a.compile_baseline, "--no-aoti-build"] if a.device == "cuda" else
                       [a.kbcheck, str(task_dir), str(sol_dir), "--device", "cpu", "--json", rep.name])
                s0 = time.monotonic()
                proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.DEVNULL,
                                                            stderr=subprocess.DEVNULL, start_new_session=True)
                waiter = asyncio.ensure_future(proc.wait())
                stopper = asyncio.ensure_future(stop.wait())
                await asyncio.wait([waiter, stopper], timeout=left, return_when=asyncio.FIRST_COMPLETED)
                stopper.cancel()
                if not waiter.done():
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    await waiter
                    why = "stopped by a signal" if stop.is_set() else "its time ran out"
                    say(f"sequential: {task}: killed after {time.monotonic() - s0:.1f} s ({why}); not counted")
                    break
                try:
                    doc = json.loads(Path(rep.name).read_text() or "{}")
                except (OSError, ValueError):
                    doc = {}
                st = doc.get("status", f"exit {proc.returncode}")
            n += 1
            if a.keep_reports:
                keep_report(a.keep_reports, f"sequential-{n:04d}", task, doc)
            t_last = time.monotonic()
            statuses[st] = statuses.get(st, 0) + 1
            # kbprof's report is the profile itself: its seconds and where its baselines came from.
            prof = doc if a.device == "cuda" and doc.get("timings") else None
            if prof:
                where = baselines(prof)
                cache[where] = cache.get(where, 0) + 1
                if p := profile_parts(prof):
                    parts.append(p)
            say(f"sequential: {task}: {st} in {time.monotonic() - s0:.1f} s"
                + (f" ({stage_seconds({'profile': prof})})" if prof else ""))
        if why:
            break
    seq = t_last - t0  # to the end of the last one that finished (a killed one is not counted)
    rate = f"{n / seq * 3600 / (gpus or 1):.0f} {'per GPU-hour' if gpus else 'per hour'}" if n else "no rate"
    say(f"{tool} one after another: {n} evaluations in {seq:.1f} s: {rate}; statuses {counts(statuses)}"
        + (f"; baselines {counts(cache)}" if cache else "") + (f"; NOT ALL DONE: {why}" if why else ""), summary=True)
    if parts:
        say(f"{tool} one after another: profile parts, median s over {len(parts)}: {parts_line(parts)}", summary=True)


async def amain(a, sols, server, url, gpus, stop):
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda s=sig: (say(f"{signal.Signals(s).name}: stopping; the summary follows"),
                                                    stop.set()))
    start = time.monotonic()
    end = start + a.seconds
    seq_share = min(a.sequential_seconds, a.seconds / 3) if a.sequential else 0.0
    # On a GPU the profile stage checks the correctness seeds itself (as kbprof does, in one
    # worker and one reference worker, started beside the build); asking verify too would run a
    # second pair first (lib/eval/session.cpp), twice the GPU time of the kbprof comparison.
    stages = a.stages.split(",") if a.stages else (["build", "profile"] if a.device == "cuda"
                                                   else ["static", "build", "verify"])
    busy_name = "kbserve_gpu_busy_fraction" if a.device == "cuda" else "kbserve_cpu_busy_fraction"
    per = (gpus or 1, f"per GPU-hour ({gpus} GPUs)" if gpus else f"per hour on {a.cpu_slots} CPU slots")
    if a.warmup_seconds > 0 and not stop.is_set():
        # On a GPU each solution's first profile measures its task's baselines (the server leases a
        # GPU to one evaluation at a time, so nothing else is on it and they are cached); a few
        # clients, so that a build overlaps a profile and the lines come as each one ends.
        wstages = ["static", "build"] if a.device == "cpu" else ["build", "profile"]
        wclients = len(sols) if a.device == "cpu" else min(len(sols), 2 * max(1, gpus))
        work = [(f"warmup-{i}-{time.time_ns()}", task, files) for i, (task, _, _, files) in enumerate(sols)]
        w = Phase("warm-up", len(work), a.keep_reports)
        what = "builds" if a.device == "cpu" else "evaluations (the baselines into the cache)"
        say(f"warm-up: {len(work)} {what} (stages {','.join(wstages)}) from {wclients} clients, "
            f"at most {a.warmup_seconds:.0f} s")
        await run_phase(w, url, work, wclients, a.device, wstages, min(end - seq_share, start + a.warmup_seconds),
                        stop, busy_name, a.progress_s, (1, "per hour"), True)
        phase_summary(w, (1, "per hour"), what)
    load = None
    if not stop.is_set():
        work = [(f"bench-{r}-{i}-{time.time_ns()}", task, files) for r in range(a.rounds)
                for i, (task, _, _, files) in enumerate(sols)]
        load = Phase("load", len(work), a.keep_reports)
        budget = end - seq_share - time.monotonic()
        say(f"load: {len(work)} evaluations ({len(sols)} solutions x {a.rounds} rounds, stages {','.join(stages)}) "
            f"from {a.clients} clients, at most {max(0.0, budget):.0f} s")
        sampler = GpuUtilization().start() if a.device == "cuda" else None
        try:
            await run_phase(load, url, work, a.clients, a.device, stages, end - seq_share, stop, busy_name,
                            a.progress_s, per, a.verbose)
        finally:
            if sampler:
                load.utilization = sampler.stop()
        phase_summary(load, per, f"{len(sols)} solutions x {a.rounds} rounds from {a.clients} clients")
    return load, end


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", required=True, type=Path)
    ap.add_argument("--solutions", required=True, type=Path)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--stages", default="", help="the load's stages, comma-separated (default: build,profile on "
                    "cuda, whose profile verifies the seeds too; static,build,verify on cpu)")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=200,
                    help="the whole run's budget from the server's start (warm-up, load, sequential); default 200")
    ap.add_argument("--warmup-seconds", type=float, default=60,
                    help="the warm-up's budget (0: no warm-up; the load starts cold); default 60")
    ap.add_argument("--compile-baseline", default="none", choices=["auto", "aoti", "python", "none"],
                    help="the torch.compile figure, kbserve's and kbprof's --compile-baseline (kbprof with "
                    "--no-aoti-build: neither builds AOTInductor's package); default none")
    ap.add_argument("--progress-s", type=float, default=10, help="seconds between progress lines")
    ap.add_argument("--verbose", action="store_true", help="a line for every evaluation (default: the first of "
                    "each task and status)")
    ap.add_argument("--kbserve", default=str(ROOT / "build/tools/kbserve/kbserve"))
    ap.add_argument("--kbprof", default=str(ROOT / "build/tools/kbprof/kbprof"))
    ap.add_argument("--kbcheck", default=str(ROOT / "build/tools/kbcheck/kbcheck"))
    ap.add_argument("--cpu-slots", type=int, default=os.cpu_count())
    ap.add_argument("--sequential", type=int, default=1, help="rounds of the one-after-another comparison (0: none)")
    ap.add_argument("--sequential-seconds", type=float, default=40,
                    help="the comparison's share of --seconds (at most a third of it); default 40")
    ap.add_argument("--keep-reports", type=Path, help="a folder for every evaluation's JSON: the server's for the "
                    "warm-up and the load, kbprof's report for the one-after-another runs (where each profile's "
                    "seconds went)")
    ap.add_argument("--server-log", type=Path, help="kbserve's stdout and stderr (default: next to its state)")
    ap.add_argument("--serve-args", default="", help="more kbserve flags, space-separated")
    a = ap.parse_args()
    # Line by line into a file too (python3 without -u buffers a file in
    # blocks, and a kill loses the block).
    sys.stdout.reconfigure(line_buffering=True)
    sols = solutions(a.tasks, a.solutions)
    if not sols:
        sys.exit("serve_load: no forward.cpp under " + str(a.solutions))
    gpus = 0
    if a.device == "cuda":
        try:
            gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout.count("GPU ")
        except (OSError, subprocess.TimeoutExpired) as e:
            say(f"nvidia-smi -L failed ({e!r}): rates are per server, not per GPU")
    state = Path(tempfile.mkdtemp(prefix="kbserve-bench-"))
    extra = ["--gpus", "auto" if a.device == "cuda" else "none", "--queue-limit", str(max(256, 2 * a.clients))]
    more = a.serve_args.split() if a.serve_args else []
    if any(m.startswith("--compile-baseline") for m in more):
        sys.exit("serve_load: give --compile-baseline, not in --serve-args (kbprof takes it too)")
    extra += ["--compile-baseline", a.compile_baseline]
    if not any(m.startswith("--drain-s") for m in more):
        extra += ["--drain-s", "20"]  # a stop stays short: outstanding work is cancelled first anyway
    extra += more
    server = LocalServer(a.tasks, state / "state", binary=a.kbserve, cpu_slots=a.cpu_slots, extra_args=extra,
                         log_path=a.server_log)
    say(f"serve_load: {len(sols)} solutions, device {a.device} ({gpus} GPUs), budget {a.seconds:.0f} s, "
        f"compile baseline {a.compile_baseline}, baseline cache {baseline_cache_dir()} (kbserve's and kbprof's); "
        f"starting {' '.join(server.command())} (log {server.log_path})")
    # Until the event loop takes them over, SIGTERM / SIGINT end the start
    # quietly (the server is stopped below).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        url = server.start()
        say(f"kbserve listening at {url}")
    except KeyboardInterrupt:
        say("stopped by a signal while kbserve started")
        server.stop(timeout=10)
        return 130
    code = 0
    try:
        stop = asyncio.Event()
        loop = asyncio.new_event_loop()
        try:
            load, end = loop.run_until_complete(amain(a, sols, server, url, gpus, stop))
            if a.sequential and not stop.is_set():
                loop.run_until_complete(sequential(a, sols, gpus, end, stop))
        finally:
            loop.close()
        if stop.is_set():
            code = 143
    except KeyboardInterrupt:
        say("stopped by a signal")
        code = 130
    finally:
        # A further signal while stopping must not leave the server behind.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        say("stopping kbserve (outstanding evaluations were cancelled; at most 30 s)")
        rc = server.stop(timeout=30)
        tail = server._log_since(0).strip().splitlines()[-8:]
        say(f"kbserve exited {rc}; its log {server.log_path} ends:")
        for line in tail:
            print("    " + line, flush=True)
        print("summary:" + ("" if SUMMARY else " nothing measured"), flush=True)
        for line in SUMMARY:
            print("  " + line, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
