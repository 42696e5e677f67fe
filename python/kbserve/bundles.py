"""Task bundles as bytes: how a task reaches a node that lacks it.

A bundle (docs/task-format.md) is a directory with task.json, model.py,
reference.pt, ... Its content hash is the server's (lib/serve/task_store.cpp
``bundleHash``): SHA-256 over, for each regular file in path order, its
relative path, a NUL, ``sha256:`` and the hex SHA-256 of its bytes and a
newline, written
``sha256:<hex>``. GET /v1/tasks/{id} answers the same hash, so a node can
tell whether it holds the very bundle a router means.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Bundle", "bundle_hash", "pack", "unpack"]


def _files(root: Path) -> list[Path]:
    out = []
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            if p.is_file():
                out.append(p.relative_to(root))
    # std::filesystem::path orders element by element, not by the whole string.
    return sorted(out, key=lambda p: p.parts)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def bundle_hash(directory: os.PathLike | str) -> str:
    """``sha256:<hex>`` of a bundle directory, as kbserve computes it."""
    root = Path(directory)
    h = hashlib.sha256()
    for rel in _files(root):
        h.update(rel.as_posix().encode())
        h.update(b"\0")
        h.update(b"sha256:" + _file_sha256(root / rel).encode())
        h.update(b"\n")
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True)
class Bundle:
    """A packed bundle: its task id, content hash and tar bytes."""

    task_id: str
    content_hash: str
    data: bytes


def pack(directory: os.PathLike | str) -> Bundle:
    """Packs a bundle directory into an uncompressed, reproducible tar
    (sorted names, zero times and owners), with its id and content hash."""
    root = Path(directory)
    meta = json.loads((root / "task.json").read_text())
    task_id = meta["id"]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in _files(root):
            p = root / rel
            info = tarfile.TarInfo(rel.as_posix())
            info.size = p.stat().st_size
            info.mode = 0o644
            info.mtime = 0
            with open(p, "rb") as f:
                tar.addfile(info, f)
    return Bundle(task_id, bundle_hash(root), buf.getvalue())


def unpack(data: bytes, destination: os.PathLike | str, expected_hash: str) -> Path:
    """Unpacks tar bytes into ``destination`` (replaced atomically) and checks
    that the result hashes to ``expected_hash``; raises ValueError if not."""
    dest = Path(destination)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for m in tar.getmembers():
                if not m.isfile():
                    raise ValueError(f"bundle member {m.name!r} is not a regular file")
            tar.extractall(tmp, filter="data")
        got = bundle_hash(tmp)
        if got != expected_hash:
            raise ValueError(f"bundle hashes to {got}, expected {expected_hash}")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        return dest
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
