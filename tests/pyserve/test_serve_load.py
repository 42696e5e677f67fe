"""scripts/bench/serve_load.py on the CPU: a run writes its progress into a
file line by line (no -u, no PYTHONUNBUFFERED) and stays within --seconds;
SIGTERM in the middle of the load (what `timeout` sends) still leaves the
phase's summary, cancels what was outstanding and stops the server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import SOLUTIONS, SOURCE_ROOT, TASKS

SCRIPT = SOURCE_ROOT / "scripts" / "bench" / "serve_load.py"


def _solutions(tmp: Path) -> Path:
    d = tmp / "sols" / "linear_relu"  # the folder under TASKS that holds testdata/linear_relu
    shutil.copytree(SOLUTIONS / "ok_linear_relu", d)
    return d.parent


def _start(kbserve_bin: str, tmp: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    log = tmp / "bench.log"
    with open(log, "wb") as out:
        p = subprocess.Popen([sys.executable, str(SCRIPT), "--tasks", str(TASKS), "--solutions", str(_solutions(tmp)),
                              "--device", "cpu", "--cpu-slots", "2", "--kbserve", kbserve_bin,
                              "--server-log", str(tmp / "kbserve.log"), *args],
                             stdout=out, stderr=subprocess.STDOUT, env=env)
    return p, log


def test_short_run_prints_every_phase(kbserve_bin, tmp_path):
    keep = tmp_path / "reports"
    p, log = _start(kbserve_bin, tmp_path, "--clients", "4", "--rounds", "2", "--sequential", "0",
                    "--seconds", "60", "--warmup-seconds", "20", "--keep-reports", str(keep))
    assert p.wait(timeout=180) == 0, log.read_text()
    # --keep-reports: every evaluation's JSON, by phase.
    kept = sorted(f.name for f in keep.iterdir())
    assert len([f for f in kept if f.startswith("warm-up-")]) == 1 and len([f for f in kept if f.startswith("load-")]) == 2, kept
    assert json.loads((keep / kept[0]).read_text()).get("status") == "ok", kept
    text = log.read_text()
    assert "warm-up: 1 of 1 evaluations" in text, text
    assert "compile baseline none" in text and "--compile-baseline none" in text, text  # kbserve's flag
    assert "load: 2 of 2 evaluations" in text and "statuses ok 2" in text, text
    assert text.rstrip().splitlines()[-3] == "summary:", text
    assert "NOT ALL DONE" not in text, text


def test_sigterm_leaves_a_summary(kbserve_bin, tmp_path):
    p, log = _start(kbserve_bin, tmp_path, "--clients", "4", "--rounds", "200", "--sequential", "1",
                    "--warmup-seconds", "0", "--progress-s", "1")
    deadline = time.monotonic() + 120
    while "load: 200 evaluations" not in log.read_text():  # the load phase began
        assert p.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    time.sleep(3)
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=90)
    text = log.read_text()
    assert rc == 143, text
    assert "SIGTERM: stopping" in text, text
    assert "NOT ALL DONE: stopped by a signal" in text, text
    assert "kbcheck one after another" not in text, text  # the comparison does not start after a stop
    assert "summary:" in text and "kbserve exited" in text, text
    assert "stopped by SIGTERM" in (tmp_path / "kbserve.log").read_text()
