"""kbserve on a Ray cluster: one server per node, a router to the least loaded.

:class:`KbserveNode` is a Ray actor pinned to one node (NodeAffinity). It
holds that node's GPUs (``num_gpus`` = the node's GPU count, 0 on a CPU
node; Ray sets CUDA_VISIBLE_DEVICES, which the server inherits) and runs one
``kbserve`` process on loopback with a node-local task directory. It is the
server's only client.

:class:`KbservePool` is the router, in the driver. Tasks travel by content
hash, never by shared path: ``add_task(dir)`` packs the bundle once
(:mod:`kbserve.bundles`) and puts the tar bytes in Ray's object store; each
evaluation carries the bundle's hash and a reference to those bytes, and an
actor that lacks the hash fetches the bytes (only then), unpacks them into
its task directory under the hash, checks the hash and makes the server see
the new bundle: ``POST /v1/tasks/reload`` when the server has it, else a
restart of the server once its evaluations in flight have finished (the
server needs a bundle to start, so it starts with the first one).

Routing: each evaluation goes to the candidate actor (a GPU node for a
``cuda`` request, any node for ``cpu``) with the smallest load, where load
is the larger of the router's own evaluations in flight on that actor and
the server's ``kbserve_queue_depth + kbserve_running`` from its /metrics
(refreshed at most every ``refresh_s``; it counts other clients' work too).
Ties go round-robin.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from . import bundles
from .client import AsyncClient, evaluation_request, parse_metrics
from .errors import KbserveError, NotFound, ServerError
from .server import LocalServer, find_binary

__all__ = ["KbserveNode", "KbservePool"]


class KbserveNode:
    """One node's kbserve, as a Ray actor (use :meth:`KbservePool.start`, or
    ``ray.remote(KbserveNode).options(...).remote(...)`` yourself)."""

    def __init__(self, binary: Optional[str] = None, work_dir: Optional[str] = None,
                 cpu_slots: Optional[int] = None, extra_args: Sequence[str] = (), refresh: str = "auto"):
        if refresh not in ("auto", "restart"):
            raise ValueError("refresh must be 'auto' (reload when the server can) or 'restart'")
        self.binary = find_binary(binary)
        self.refresh = refresh
        self.node_id = ray.get_runtime_context().get_node_id()
        self.ip = ray.util.get_node_ip_address()
        root = Path(work_dir or os.environ.get("KBSERVE_RAY_WORK") or tempfile.gettempdir())
        self.base = root / f"kbserve-ray-{self.node_id[:12]}-{os.getpid()}"
        self.tasks_dir = self.base / "tasks"
        self.tasks_dir.mkdir(parents=True, exist_ok=True)
        self.cpu_slots = cpu_slots
        self.extra_args = list(extra_args)
        self.hash_to_id: dict[str, str] = {}
        self.id_to_hash: dict[str, str] = {}
        self.server: Optional[LocalServer] = None
        self.client: Optional[AsyncClient] = None
        self.reload_supported: Optional[bool] = None if refresh == "auto" else False
        self.restarts = 0
        self.inflight = 0
        self.evaluated = 0
        self._bundle_lock: Optional[asyncio.Lock] = None
        self._open: Optional[asyncio.Event] = None     # cleared while the server restarts
        self._drained: Optional[asyncio.Condition] = None

    def _sync_primitives(self) -> None:
        if self._bundle_lock is None:  # made on the actor's event loop
            self._bundle_lock = asyncio.Lock()
            self._open = asyncio.Event()
            self._open.set()
            self._drained = asyncio.Condition()

    async def info(self) -> dict:
        return {"node_id": self.node_id, "ip": self.ip, "url": self.server.url if self.server else None,
                "gpus": [str(g) for g in ray.get_gpu_ids()], "tasks": dict(self.id_to_hash),
                "work_dir": str(self.base), "restarts": self.restarts, "reload_supported": self.reload_supported,
                "evaluated": self.evaluated}

    async def has(self, content_hash: str) -> bool:
        return content_hash in self.hash_to_id

    async def ensure_bundle(self, task_id: str, content_hash: str, data_ref: list) -> bool:
        """Makes the server hold the bundle ``content_hash``; ``data_ref`` is
        ``[ObjectRef]`` of its tar bytes, fetched only when missing. True when
        it was added."""
        self._sync_primitives()
        if content_hash in self.hash_to_id:
            return False
        async with self._bundle_lock:
            if content_hash in self.hash_to_id:
                return False
            data = await data_ref[0]
            old = self.id_to_hash.get(task_id)
            bundles.unpack(data, self.tasks_dir / content_hash.replace(":", "-"), content_hash)
            if old is not None:  # one version of a task id per server
                shutil.rmtree(self.tasks_dir / old.replace(":", "-"), ignore_errors=True)
                self.hash_to_id.pop(old, None)
            await self._refresh_server()
            self.hash_to_id[content_hash] = task_id
            self.id_to_hash[task_id] = content_hash
            return True

    async def _refresh_server(self) -> None:
        if self.server is None:
            args = list(self.extra_args)
            if "--gpus" not in args:
                # The GPUs Ray gave this actor (all of the node's), as ordinals
                # of the CUDA_VISIBLE_DEVICES the server inherits; none on a CPU node.
                n = len(ray.get_gpu_ids())
                args += ["--gpus", ",".join(str(i) for i in range(n)) if n else "none"]
            self.server = LocalServer(self.tasks_dir, self.base / "state", binary=self.binary,
                                      cpu_slots=self.cpu_slots, extra_args=args,
                                      log_path=self.base / "kbserve.log")
            # Started on the actor's event-loop thread, which lives as long as
            # the actor: the server's parent-death signal follows that thread.
            self.server.start()
            self.client = AsyncClient(self.server.url, timeout=120)
            return
        if self.reload_supported is not False:
            try:
                await self.client.reload_tasks()
                self.reload_supported = True
                return
            except ServerError as e:
                if e.status not in (404, 405):
                    raise
                self.reload_supported = False
        # No reload endpoint: restart once nothing is in flight (the state
        # directory, and so the journal, stays).
        self._open.clear()
        try:
            async with self._drained:
                await self._drained.wait_for(lambda: self.inflight == 0)
            await self.client.aclose()
            self.server.stop()
            self.server.start()
            self.client = AsyncClient(self.server.url, timeout=120)
            self.restarts += 1
        finally:
            self._open.set()

    async def evaluate(self, request: Mapping[str, Any], content_hash: Optional[str] = None,
                       data_ref: Optional[list] = None, timeout: Optional[float] = None) -> dict:
        """Runs one evaluation request (the API's JSON) to the end; the answer is
        the server's evaluation plus ``"kbserve_node": {"node_id", "ip"}``."""
        self._sync_primitives()
        if content_hash is not None:
            await self.ensure_bundle(request["task"], content_hash, data_ref)
        if self.client is None:
            raise KbserveError(f"node {self.node_id}: no task bundle yet, so no server")
        await self._open.wait()
        self.inflight += 1
        try:
            ev = await self.client.evaluate_request(request, timeout=timeout)
        finally:
            self.inflight -= 1
            async with self._drained:
                self._drained.notify_all()
        self.evaluated += 1
        ev["kbserve_node"] = {"node_id": self.node_id, "ip": self.ip}
        return ev

    async def load(self) -> dict:
        """The actor's evaluations in flight and the server's own gauges."""
        out = {"node_id": self.node_id, "inflight": self.inflight, "queue_depth": 0.0, "running": 0.0}
        if self.client is not None and self._open is not None and self._open.is_set():
            try:
                m = parse_metrics(await self.client.metrics())
                out["queue_depth"] = m.get(("kbserve_queue_depth", ()), 0.0)
                out["running"] = m.get(("kbserve_running", ()), 0.0)
            except KbserveError:
                pass
        return out

    async def metrics(self) -> str:
        return await self.client.metrics() if self.client else ""

    async def shutdown(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        if self.server is not None:
            self.server.stop()
            self.server = None


class KbservePool:
    """The router: least-loaded dispatch of evaluations over :class:`KbserveNode` actors."""

    def __init__(self, actors: Sequence[Any], infos: Sequence[dict], refresh_s: float = 1.0):
        self.actors = list(actors)
        self.infos = list(infos)
        self.refresh_s = refresh_s
        self._bundles: dict[str, tuple[str, Any]] = {}  # task id -> (content hash, ObjectRef of the tar)
        self._inflight = [0] * len(self.actors)
        self._server_load = [0.0] * len(self.actors)
        self._loaded_at = 0.0
        self._rr = itertools.count()
        self._lock = threading.Lock()

    @classmethod
    def start(cls, *, binary: Optional[str] = None, nodes: Optional[Sequence[str]] = None,
              cpu_slots: Optional[int] = None, work_dir: Optional[str] = None, extra_args: Sequence[str] = (),
              refresh: str = "auto", refresh_s: float = 1.0) -> "KbservePool":
        """One :class:`KbserveNode` per alive node of the connected cluster (or
        per node id of ``nodes``), each holding all of its node's GPUs.
        ``binary`` must be the path of kbserve on every node; ``refresh`` how a
        node makes its server see a new bundle ("auto": POST /v1/tasks/reload
        when the server has it, else restart; "restart": always restart).
        The nodes must import this package: install it there, or ship it with
        the job (``ray.init(runtime_env={"py_modules": [kbserve]})``)."""
        if not ray.is_initialized():
            raise KbserveError("ray.init() first: the pool starts its actors on the connected cluster")
        alive = {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}
        chosen = list(nodes) if nodes is not None else sorted(alive)
        # Resolved here so that every node is told the same path (workers may
        # not inherit the driver's environment).
        binary = binary or os.environ.get("KBSERVE_BIN")
        remote_cls = ray.remote(KbserveNode)
        actors = []
        for node_id in chosen:
            if node_id not in alive:
                raise KbserveError(f"no alive Ray node {node_id}")
            gpus = int(alive[node_id].get("Resources", {}).get("GPU", 0))
            actors.append(remote_cls.options(
                num_cpus=0, num_gpus=gpus, max_concurrency=1000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                name=None).remote(binary, work_dir, cpu_slots, list(extra_args), refresh))
        infos = ray.get([a.info.remote() for a in actors])
        return cls(actors, infos, refresh_s)

    def add_task(self, directory: os.PathLike | str) -> bundles.Bundle:
        """Packs a bundle and puts its bytes in the object store; actors fetch
        them on their first evaluation of the task. Answers the bundle (its
        ``task_id`` and ``content_hash``)."""
        b = bundles.pack(directory)
        with self._lock:
            self._bundles[b.task_id] = (b.content_hash, ray.put(b.data))
        return b

    def _refresh_loads(self) -> None:
        if time.monotonic() - self._loaded_at < self.refresh_s:
            return
        self._loaded_at = time.monotonic()
        try:
            loads = ray.get([a.load.remote() for a in self.actors], timeout=10)
        except ray.exceptions.GetTimeoutError:
            return
        for i, l in enumerate(loads):
            self._server_load[i] = l["queue_depth"] + l["running"]

    def _pick(self, device: str) -> int:
        candidates = [i for i, info in enumerate(self.infos) if device != "cuda" or info["gpus"]]
        if not candidates:
            raise KbserveError(f"no node of the pool offers device {device!r}")
        self._refresh_loads()
        with self._lock:
            turn = next(self._rr)
            order = candidates[turn % len(candidates):] + candidates[:turn % len(candidates)]
            best = min(order, key=lambda i: max(self._inflight[i], self._server_load[i]))
            self._inflight[best] += 1
            return best

    def _dispatch(self, request: Mapping[str, Any], timeout: Optional[float]) -> tuple[int, Any]:
        task = request["task"]
        with self._lock:
            known = self._bundles.get(task)
        if known is None:
            raise NotFound(404, f"task {task!r} was not added to the pool (add_task)", None, "route", task)
        content_hash, ref = known
        i = self._pick(request.get("device", "cpu"))
        # The ref is nested in a list so that Ray does not fetch it unless the actor needs it.
        return i, self.actors[i].evaluate.remote(dict(request), content_hash, [ref], timeout)

    def _done(self, i: int) -> None:
        with self._lock:
            self._inflight[i] -= 1

    def evaluate_requests(self, requests: Sequence[Mapping[str, Any]], timeout: Optional[float] = None) -> list[dict]:
        """Many evaluation requests (the API's JSON) at once; answers in order."""
        dispatched = [self._dispatch(r, timeout) for r in requests]
        index = {ref: (k, i) for k, (i, ref) in enumerate(dispatched)}
        results: list[Optional[dict]] = [None] * len(dispatched)
        pending = [ref for _, ref in dispatched]
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    k, i = index[ref]
                    self._done(i)
                    results[k] = ray.get(ref)
        finally:
            for ref in pending:
                self._done(index[ref][1])
        return results  # type: ignore[return-value]

    def evaluate(self, task: str, files: Mapping[str, str], *, timeout: Optional[float] = None, **options) -> dict:
        """One evaluation through the least-loaded node (see :func:`kbserve.client.evaluation_request`)."""
        return self.evaluate_requests([evaluation_request(task, files, **options)], timeout)[0]

    async def evaluate_async(self, task: str, files: Mapping[str, str], *, timeout: Optional[float] = None,
                             **options) -> dict:
        i, ref = self._dispatch(evaluation_request(task, files, **options), timeout)
        try:
            return await ref
        finally:
            self._done(i)

    def loads(self) -> list[dict]:
        return ray.get([a.load.remote() for a in self.actors])

    def node_infos(self) -> list[dict]:
        return ray.get([a.info.remote() for a in self.actors])

    def shutdown(self) -> None:
        ray.get([a.shutdown.remote() for a in self.actors])
        for a in self.actors:
            ray.kill(a)
        self.actors = []
