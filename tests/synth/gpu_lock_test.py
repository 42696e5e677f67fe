#!/usr/bin/env python3
"""The filter workers' GPU lock (scripts/synth_filter.py GpuLock): while one
worker holds it exclusively (timed forwards) no other worker is inside a
shared section (its GPU work), shared sections overlap each other, and a
waiting timer gets in while readers keep coming. Runs on the CPU: the lock
is plain fcntl locks; only its release synchronises a CUDA device.
Usage: gpu_lock_test.py (KB_SOURCE_ROOT set)."""
import multiprocessing as mp
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ["KB_SOURCE_ROOT"], "scripts"))
import synth_filter  # noqa: E402


def log(path, what):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (what + "\n").encode())
    os.close(fd)


def reader(folder, events, n, name):
    lock = synth_filter.GpuLock(folder, synth_filter.torch.device("cpu"))
    for _ in range(n):
        with lock.shared():
            log(events, "R+ " + name)
            time.sleep(0.005)
            log(events, "R- " + name)


def writer(folder, events, n):
    lock = synth_filter.GpuLock(folder, synth_filter.torch.device("cpu"))
    time.sleep(0.05)
    for _ in range(n):
        with lock.exclusive():
            log(events, "W+")
            time.sleep(0.01)
            log(events, "W-")
        time.sleep(0.01)


def main():
    folder = tempfile.mkdtemp(prefix="kb-gpu-lock-")
    events = os.path.join(folder, "events")
    ps = [mp.Process(target=reader, args=(folder, events, 150, f"r{i}")) for i in range(3)]
    ps.append(mp.Process(target=writer, args=(folder, events, 10)))
    for p in ps:
        p.start()
    for p in ps:
        p.join(60)
    fails = 0
    if any(p.exitcode != 0 for p in ps):
        print("FAIL - a process did not finish:", [p.exitcode for p in ps])
        return 1
    inside, writing, overlap, bad, writes, reads_after_first_write = set(), False, 0, 0, 0, 0
    for line in open(events).read().splitlines():
        kind, *rest = line.split()
        if kind == "R+":
            if writing:
                bad += 1
            inside.add(rest[0])
            overlap = max(overlap, len(inside))
            if writes:
                reads_after_first_write += 1
        elif kind == "R-":
            inside.discard(rest[0])
        elif kind == "W+":
            if inside:
                bad += 1
            writing = True
        elif kind == "W-":
            writing = False
            writes += 1
    checks = [
        ("no shared section overlaps an exclusive one", bad == 0),
        (f"shared sections overlap each other (at most {overlap} at once)", overlap >= 2),
        (f"the timer got in 10 times ({writes})", writes == 10),
        (f"while readers kept coming ({reads_after_first_write} shared sections after the first)",
         reads_after_first_write > 0),
    ]
    for what, ok in checks:
        print(("ok   - " if ok else "FAIL - ") + what)
        fails += 0 if ok else 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
