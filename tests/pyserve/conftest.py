"""Shared fixtures of the Python package's tests (tests/pyserve/meson.build).

Every test runs against a real kbserve (``$KBSERVE_BIN``, the build's
binary) started on loopback port 0 with a temporary state directory; a
missing binary FAILS the test, it never skips. A test whose engine package
(ray, verl, openrlhf, openenv-core) is not installed skips, and a file whose
tests all skipped exits 77, meson's "skipped".
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

SOURCE_ROOT = Path(os.environ.get("KB_SOURCE_ROOT") or Path(__file__).resolve().parents[2])
sys.path.insert(0, str(SOURCE_ROOT / "python"))

from kbserve.server import LocalServer  # noqa: E402

TASKS = SOURCE_ROOT / "testdata" / "tasks"
SOLUTIONS = SOURCE_ROOT / "testdata" / "solutions-cpu"
TASK_ID = "testdata/linear_relu"  # testdata/tasks/linear_relu/task.json "id"


def require_engine(module: str) -> None:
    """Skips when the engine's package is not installed at all. One that is
    installed but fails to import fails the test (a broken install is not a skip)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"the engine package {module!r} is not installed (scripts/setup.sh installs it)",
                    allow_module_level=True)


def read_files(name: str) -> dict[str, str]:
    d = SOLUTIONS / name
    return {p.relative_to(d).as_posix(): p.read_text() for p in sorted(d.rglob("*")) if p.is_file()}


def _binary_problem() -> str | None:
    path = os.environ.get("KBSERVE_BIN", "")
    if not path:
        return "KBSERVE_BIN is not set: these tests need the kbserve binary (meson passes kbserve_exe)"
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"KBSERVE_BIN={path} is not an executable file"
    return None


def pytest_sessionstart(session):
    # Checked before anything is collected: a missing binary fails every file,
    # also one whose engine is absent.
    problem = _binary_problem()
    if problem:
        pytest.exit(problem, returncode=1)


@pytest.fixture(scope="session")
def kbserve_bin() -> str:
    problem = _binary_problem()
    if problem:
        pytest.fail(problem)
    return os.environ["KBSERVE_BIN"]


def start_server(kbserve_bin: str, tmp: Path, *extra: str, token_file: Path | None = None,
                 cpu_slots: int = 2, tasks: Path = TASKS) -> LocalServer:
    srv = LocalServer(tasks, tmp / "state", binary=kbserve_bin, cpu_slots=cpu_slots, token_file=token_file,
                      extra_args=list(extra), log_path=tmp / "kbserve.log")
    srv.start()
    return srv


@pytest.fixture(scope="module")
def server(kbserve_bin, tmp_path_factory):
    srv = start_server(kbserve_bin, tmp_path_factory.mktemp("kbserve"))
    yield srv
    srv.stop()
    sys.stderr.write(f"kbserve log ({srv.log_path}):\n{srv.log_tail(2000)}\n")


@pytest.fixture(scope="session")
def ok_files() -> dict[str, str]:
    return read_files("ok_linear_relu")


@pytest.fixture(scope="session")
def wrong_files() -> dict[str, str]:
    return read_files("wrong_result")


_outcomes = {"passed": 0, "skipped": 0, "failed": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_collectreport(report):
    if report.outcome == "skipped":  # a module skipped whole (its engine is absent)
        _outcomes["skipped"] += 1


def pytest_sessionfinish(session, exitstatus):
    # Meson reads 77 as "skipped": every test skipped because its engine is absent.
    if exitstatus in (0, 5) and _outcomes["passed"] == 0 and _outcomes["failed"] == 0 and _outcomes["skipped"] > 0:
        session.exitstatus = 77
