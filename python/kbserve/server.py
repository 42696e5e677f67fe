"""Starting a kbserve process from Python (the Ray actors and the tests do).

``LocalServer`` runs ``kbserve --listen HOST:PORT --tasks DIR --state-dir DIR``
with port 0 by default, reads the one line the server writes to stderr when
it listens (``kbserve: listening on http://127.0.0.1:PORT``) and hands out
that URL. The server's stdout and stderr go to a log file, never to a pipe
that could fill.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Optional, Sequence

from .errors import ServerExited

__all__ = ["LocalServer", "find_binary"]

_LISTENING = re.compile(r"kbserve: listening on (https?://\S+)")
_PR_SET_PDEATHSIG = 1


def find_binary(binary: Optional[os.PathLike | str] = None) -> str:
    """The kbserve executable: ``binary``, else ``$KBSERVE_BIN``, else ``kbserve`` on PATH."""
    candidate = str(binary) if binary else os.environ.get("KBSERVE_BIN") or shutil.which("kbserve")
    if not candidate:
        raise FileNotFoundError("no kbserve binary: pass one, set KBSERVE_BIN or put kbserve on PATH")
    if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
        raise FileNotFoundError(f"kbserve binary {candidate} is not an executable file")
    return candidate


def _die_with_parent() -> None:
    # Linux: the server gets SIGTERM when the thread that started it ends
    # (a killed Ray actor must not leave its server behind).
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


class LocalServer:
    """One kbserve process on this machine."""

    def __init__(self, tasks: os.PathLike | str, state_dir: os.PathLike | str, *,
                 binary: Optional[os.PathLike | str] = None, host: str = "127.0.0.1", port: int = 0,
                 token_file: Optional[os.PathLike | str] = None, cpu_slots: Optional[int] = None,
                 extra_args: Sequence[str] = (), log_path: Optional[os.PathLike | str] = None,
                 env: Optional[dict] = None, die_with_parent: bool = True):
        self.binary = find_binary(binary)
        self.tasks = Path(tasks)
        self.state_dir = Path(state_dir)
        self.host, self.port = host, port
        self.token_file = token_file
        self.cpu_slots = cpu_slots
        self.extra_args = list(extra_args)
        self.log_path = Path(log_path) if log_path else self.state_dir.parent / (self.state_dir.name + ".log")
        self.env = env
        self.die_with_parent = die_with_parent
        self.process: Optional[subprocess.Popen] = None
        self.url: Optional[str] = None

    def command(self) -> list[str]:
        cmd = [self.binary, "--listen", f"{self.host}:{self.port}", "--tasks", str(self.tasks),
               "--state-dir", str(self.state_dir)]
        if self.token_file:
            cmd += ["--token-file", str(self.token_file)]
        if self.cpu_slots is not None:
            cmd += ["--cpu-slots", str(self.cpu_slots)]
        return cmd + self.extra_args

    def start(self, timeout: float = 120.0) -> str:
        """Starts the server and returns its URL once it listens."""
        if self.process is not None and self.process.poll() is None:
            return self.url
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            env=self.env, preexec_fn=_die_with_parent if self.die_with_parent else None)
        deadline = time.monotonic() + timeout
        while True:
            text = self._log_since(offset)
            m = _LISTENING.search(text)
            if m:
                self.url = m.group(1).rstrip("/")
                return self.url
            if self.process.poll() is not None:
                raise ServerExited(f"kbserve exited with status {self.process.returncode} before listening: "
                                   f"{' '.join(self.command())}\n{text[-4000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerExited(f"kbserve did not say where it listens within {timeout:g} s\n{text[-4000:]}")
            time.sleep(0.05)

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, chars: int = 4000) -> str:
        return self._log_since(0)[-chars:]

    def stop(self, timeout: float = 30.0) -> Optional[int]:
        """SIGTERM (the server drains), then SIGKILL after ``timeout``; the exit status."""
        p, self.process = self.process, None
        if p is None:
            return None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return p.returncode

    def restart(self, timeout: float = 120.0) -> str:
        self.stop()
        return self.start(timeout)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self) -> "LocalServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
