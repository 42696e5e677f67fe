"""A client of kbserve's HTTP/JSON API (docs/kbserve.md, docs/kbserve-python.md).

:class:`AsyncClient` is the client; :class:`Client` runs the same methods
synchronously on a private event loop. Both answer the server's JSON as
plain dicts (the evaluation, the session step, ...), exactly as the server
wrote it, so every field docs/kbserve.md documents is there.

Refusals the client can wait out (429 queue full, 503 draining or an
infrastructure fault) are retried after the server's ``Retry-After`` (else
an exponential backoff), ``max_retries`` times; a request that failed to
connect is retried the same way when it is safe to repeat (GET, and a POST
of an evaluation that carries an ``idempotency_key``). Other error statuses
raise the :mod:`kbserve.errors` class of their status at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import ipaddress
import json
import os
import random
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Iterable, Iterator, Mapping, Optional, Sequence

import httpx

from .errors import KbserveError, RetryExhausted, WaitTimeout, error_for

__all__ = ["AsyncClient", "Client", "Event", "AsyncSession", "Session", "evaluation_request",
           "read_solution", "parse_metrics"]

DEFAULT_STAGES = ("static", "build", "verify")
_FINISHED = ("done", "cancelled")


def read_solution(directory: os.PathLike | str) -> dict[str, str]:
    """The files of a solution directory as the API takes them: relative path -> text."""
    root = Path(directory)
    if not root.is_dir():
        raise KbserveError(f"no solution directory {root}")
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            files[p.relative_to(root).as_posix()] = p.read_text()
    if not files:
        raise KbserveError(f"no file under {root}")
    return files


def evaluation_request(task: str, files: Mapping[str, str], *, device: str = "cpu",
                       stages: Optional[Sequence[str]] = None, reward: Optional[str | Mapping[str, Any]] = None,
                       deadline_s: Optional[float] = None, idempotency_key: Optional[str] = None,
                       priority: Optional[int] = None) -> dict[str, Any]:
    """The JSON body of POST /v1/evaluations (also one entry of a batch)."""
    if not isinstance(files, Mapping):
        raise TypeError("files must be a mapping of relative path -> content (see read_solution)")
    body: dict[str, Any] = {"task": task, "files": dict(files), "device": device}
    if stages is not None:
        body["stages"] = list(stages)
    if reward is not None:
        body["reward"] = {"scheme": reward} if isinstance(reward, str) else dict(reward)
    if deadline_s is not None:
        body["deadline_s"] = deadline_s
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    if priority is not None:
        body["priority"] = priority
    return body


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text exposition -> {(name, ((label, value), ...)): value}.

    ``parse_metrics(t)[("kbserve_queue_depth", ())]`` is the queue depth;
    labels are sorted by name.
    """
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        labels: tuple[tuple[str, str], ...] = ()
        if "{" in line:
            name, rest = line.split("{", 1)
            body, _, value_part = rest.rpartition("}")
            pairs = []
            i = 0
            while i < len(body):
                eq = body.index("=", i)
                key = body[i:eq].strip().lstrip(",").strip()
                j = eq + 2  # past ="
                val = []
                while body[j] != '"':
                    if body[j] == "\\" and j + 1 < len(body):
                        j += 1
                        val.append({"n": "\n"}.get(body[j], body[j]))
                    else:
                        val.append(body[j])
                    j += 1
                pairs.append((key, "".join(val)))
                i = j + 1
                while i < len(body) and body[i] in ", ":
                    i += 1
            labels = tuple(sorted(pairs))
            fields = value_part.split()
        else:
            parts = line.split()
            name, fields = parts[0], parts[1:]
        if not fields:
            continue
        try:
            out[(name.strip(), labels)] = float(fields[0])
        except ValueError:
            continue
    return out


@dataclass
class Event:
    """One Server-Sent Event of /v1/evaluations/{id}/events."""

    event: str          # "state", "stage" or "done"
    data: Any           # the JSON of its data lines (the raw text when not JSON)
    id: Optional[str] = None


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _retry_after_seconds(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_message(response: httpx.Response) -> tuple[str, Any]:
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return (text or response.reason_phrase or "error"), text
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"], body
    return json.dumps(body)[:500], body


def _quote(segment: str, safe: str = "") -> str:
    return urllib.parse.quote(segment, safe=safe)


class AsyncClient:
    """An asyncio client of one kbserve server.

    ``base_url`` is the server's root (``http://host:port``); ``token`` the
    bearer token when the server has one (else ``$KBSERVE_TOKEN`` when set).
    """

    def __init__(self, base_url: str, token: Optional[str] = None, *, timeout: float = 60.0,
                 max_retries: int = 8, max_retry_wait: float = 60.0, backoff: float = 0.5,
                 trust_env: Optional[bool] = None, transport: Optional[httpx.AsyncBaseTransport] = None):
        self.base_url = base_url.rstrip("/")
        if token is None:
            token = os.environ.get("KBSERVE_TOKEN") or None
        headers = {"Accept": "application/json", "User-Agent": "kbserve-python"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if trust_env is None:
            trust_env = not _is_loopback(self.base_url)  # no proxy between a client and its own machine
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.backoff = backoff
        self.retries = 0  # refusals waited out so far (429/503/connect), for callers' metrics
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout,
                                       trust_env=trust_env, transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    # -- transport ---------------------------------------------------------

    async def _request(self, method: str, path: str, *, json_body: Any = None, params: Optional[dict] = None,
                       timeout: Optional[float] = None, repeatable: Optional[bool] = None) -> httpx.Response:
        """Sends one request, waiting out 429/503 (and connection failures when
        ``repeatable``); raises the error class of any other error status."""
        if repeatable is None:
            repeatable = method == "GET"
        attempt = 0
        while True:
            try:
                response = await self._http.request(method, path, json=json_body, params=params,
                                                    timeout=timeout if timeout is not None else self.timeout)
            except httpx.TimeoutException as e:
                raise KbserveError(f"kbserve at {self.base_url}: {method} {path}: timed out ({e!r})") from e
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as e:
                if not repeatable or attempt >= self.max_retries:
                    raise KbserveError(f"kbserve at {self.base_url}: {method} {path}: {e!r}") from e
                attempt += 1
                self.retries += 1
                await asyncio.sleep(self._backoff(attempt, None))
                continue
            if response.status_code < 400:
                return response
            message, body = _error_message(response)
            if response.status_code in (429, 503):
                retry_after = _retry_after_seconds(response.headers.get("Retry-After"))
                if attempt < self.max_retries:
                    attempt += 1
                    self.retries += 1
                    await asyncio.sleep(self._backoff(attempt, retry_after))
                    continue
                raise RetryExhausted(response.status_code, message, body, method, path, retry_after, attempt + 1)
            raise error_for(response.status_code, message, body, method, path)

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_wait)
        # Exponential with jitter, so that many clients refused together do not return together.
        return min(self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random()), self.max_retry_wait)

    async def _json(self, method: str, path: str, **kw) -> Any:
        return (await self._request(method, path, **kw)).json()

    # -- health, metrics, tasks -------------------------------------------

    async def healthz(self) -> dict:
        return await self._json("GET", "/healthz")

    async def readyz(self) -> bool:
        """Whether the server accepts evaluations now (503 is an answer here, not retried)."""
        response = await self._http.get("/readyz")
        return response.status_code == 200

    async def metrics(self) -> str:
        """The Prometheus text of /metrics (see :func:`parse_metrics`)."""
        return (await self._request("GET", "/metrics")).text

    async def tasks(self) -> list[dict]:
        return (await self._json("GET", "/v1/tasks"))["tasks"]

    async def task(self, task_id: str) -> dict:
        """{"id", "device", "content_hash", "task": the bundle's task.json}."""
        # Task ids hold '/' (testdata/linear_relu); the route takes the rest of the path.
        return await self._json("GET", f"/v1/tasks/{_quote(task_id, safe='/')}")

    async def reload_tasks(self) -> dict:
        """Asks the server to read its task directory again (POST /v1/tasks/reload): {"tasks": N}."""
        return await self._json("POST", "/v1/tasks/reload", json_body={})

    # -- evaluations -------------------------------------------------------

    async def submit(self, task: str, files: Mapping[str, str], *, wait: bool = False,
                     timeout_s: Optional[float] = None, **options) -> dict:
        """Queues one evaluation; answers it as the server has it (queued, or
        finished when ``wait`` and it finished within ``timeout_s``).
        ``options``: device, stages, reward, deadline_s, idempotency_key, priority."""
        body = evaluation_request(task, files, **options)
        return await self.submit_request(body, wait=wait, timeout_s=timeout_s)

    async def submit_request(self, body: Mapping[str, Any], *, wait: bool = False,
                             timeout_s: Optional[float] = None) -> dict:
        """:meth:`submit` for a request already in the API's JSON shape."""
        params, timeout = self._wait_params(wait, timeout_s)
        return await self._json("POST", "/v1/evaluations", json_body=dict(body), params=params, timeout=timeout,
                                repeatable=bool(body.get("idempotency_key")))

    async def get(self, evaluation_id: str) -> dict:
        return await self._json("GET", f"/v1/evaluations/{_quote(evaluation_id)}")

    async def wait(self, evaluation_id: str, timeout: Optional[float] = None, poll_s: float = 30.0) -> dict:
        """Blocks until the evaluation is done or cancelled (the server holds
        each request up to ``poll_s``); raises :class:`WaitTimeout` after ``timeout``."""
        start = time.monotonic()
        while True:
            left = None if timeout is None else timeout - (time.monotonic() - start)
            slice_s = poll_s if left is None else max(0.0, min(poll_s, left))
            params, req_timeout = self._wait_params(True, slice_s)
            ev = await self._json("GET", f"/v1/evaluations/{_quote(evaluation_id)}", params=params,
                                  timeout=req_timeout)
            if ev.get("state") in _FINISHED:
                return ev
            if left is not None and left <= 0:
                raise WaitTimeout(ev, timeout)

    async def evaluate(self, task: str, files: Mapping[str, str], *, timeout: Optional[float] = None,
                       **options) -> dict:
        """Submits one evaluation and returns it finished (done or cancelled)."""
        return await self.evaluate_request(evaluation_request(task, files, **options), timeout=timeout)

    async def evaluate_request(self, body: Mapping[str, Any], *, timeout: Optional[float] = None,
                               poll_s: float = 30.0) -> dict:
        start = time.monotonic()
        first = poll_s if timeout is None else min(poll_s, timeout)
        ev = await self.submit_request(body, wait=True, timeout_s=first)
        if ev.get("state") in _FINISHED:
            return ev
        left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
        return await self.wait(ev["id"], timeout=left, poll_s=poll_s)

    async def cancel(self, evaluation_id: str) -> dict:
        return await self._json("POST", f"/v1/evaluations/{_quote(evaluation_id)}/cancel", json_body={})

    async def events(self, evaluation_id: str, timeout: Optional[float] = None) -> AsyncIterator[Event]:
        """The evaluation's Server-Sent Events (state, stage, done) as they come;
        ends after ``done`` (or when the server closes the stream)."""
        url = f"/v1/evaluations/{_quote(evaluation_id)}/events"
        http_timeout = httpx.Timeout(self.timeout, read=timeout)
        async with self._http.stream("GET", url, headers={"Accept": "text/event-stream"},
                                     timeout=http_timeout) as response:
            if response.status_code >= 400:
                await response.aread()
                message, body = _error_message(response)
                raise error_for(response.status_code, message, body, "GET", url)
            kind, data, ev_id = None, [], None
            async for line in response.aiter_lines():
                if line == "":
                    if data or kind:
                        text = "\n".join(data)
                        try:
                            payload = json.loads(text)
                        except ValueError:
                            payload = text
                        event = Event(kind or "message", payload, ev_id)
                        yield event
                        if event.event == "done":
                            return
                    kind, data = None, []
                    continue
                if line.startswith(":"):
                    continue
                field, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if field == "event":
                    kind = value
                elif field == "data":
                    data.append(value)
                elif field == "id":
                    ev_id = value

    async def batch(self, requests: Iterable[Mapping[str, Any]], *, wait: bool = False,
                    timeout_s: Optional[float] = None) -> list[dict]:
        """POST /v1/batches: many evaluation requests (see :func:`evaluation_request`) at once."""
        params, timeout = self._wait_params(wait, timeout_s)
        body = {"evaluations": [dict(r) for r in requests]}
        return (await self._json("POST", "/v1/batches", json_body=body, params=params, timeout=timeout))["evaluations"]

    def _wait_params(self, wait: bool, timeout_s: Optional[float]) -> tuple[Optional[dict], Optional[float]]:
        if not wait:
            return None, None
        params = {"wait": "true"}
        if timeout_s is not None:
            params["timeout_s"] = f"{timeout_s:g}"
        # The server holds the request up to timeout_s: read a little longer than that.
        return params, (timeout_s or 0) + max(30.0, self.timeout)

    # -- sessions (multi-turn, OpenEnv-shaped) -----------------------------

    async def reset(self, task: str, *, device: str = "cpu", reward: Optional[str | Mapping[str, Any]] = None,
                    **extra) -> dict:
        """POST /v1/sessions: a new episode on ``task``; answers
        {"session_id", "observation": {"prompt", "messages", "tools"}, "reward", "done", ...}."""
        body: dict[str, Any] = {"task": task, "device": device, **extra}
        if reward is not None:
            body["reward"] = {"scheme": reward} if isinstance(reward, str) else dict(reward)
        return await self._json("POST", "/v1/sessions", json_body=body, timeout=max(self.timeout, 120.0))

    async def step(self, session_id: str, name: str, arguments: Optional[Mapping[str, Any] | str] = None,
                   *, timeout: Optional[float] = None) -> dict:
        """One tool call; answers {"observation": {"text", "ok", ...}, "reward", "done", ...}."""
        body = {"tool_call": {"name": name, "arguments": {} if arguments is None else arguments}}
        # A step may compile, verify and profile: as long as the server's limits allow.
        return await self._json("POST", f"/v1/sessions/{_quote(session_id)}/step", json_body=body,
                                timeout=timeout if timeout is not None else max(self.timeout, 900.0))

    async def close_session(self, session_id: str) -> None:
        await self._request("DELETE", f"/v1/sessions/{_quote(session_id)}")

    def session(self, task: str, **options) -> "AsyncSession":
        """``async with client.session(task) as s: await s.step("verify")``."""
        return AsyncSession(self, task, options)

    # -- the engines' reward shapes ---------------------------------------

    async def reward_openrlhf(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[str],
                              scheme: Optional[str] = None) -> dict:
        """POST /v1/reward/openrlhf: {"rewards", "scores", "extra_logs", "evaluations"}
        (OpenRLHF's remote reward shape); ``scheme`` overrides the server's default."""
        body = {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}
        return await self._json("POST", "/v1/reward/openrlhf", json_body=body,
                                params={"scheme": scheme} if scheme else None, timeout=max(self.timeout, 900.0))

    async def reward_slime(self, prompt: str, response: str, label: str, scheme: Optional[str] = None) -> float:
        """POST /v1/reward/slime: the reward as one number."""
        body = {"prompt": prompt, "response": response, "label": label}
        return float(await self._json("POST", "/v1/reward/slime", json_body=body,
                                      params={"scheme": scheme} if scheme else None,
                                      timeout=max(self.timeout, 900.0)))


class AsyncSession:
    """One episode of a server session (reset on enter, close on exit)."""

    def __init__(self, client: AsyncClient, task: str, options: dict):
        self.client, self.task, self.options = client, task, options
        self.id: Optional[str] = None
        self.reset_result: Optional[dict] = None
        self.done = False

    async def start(self) -> dict:
        self.reset_result = await self.client.reset(self.task, **self.options)
        self.id = self.reset_result["session_id"]
        return self.reset_result

    async def step(self, name: str, arguments: Optional[Mapping[str, Any] | str] = None) -> dict:
        if self.id is None:
            raise KbserveError("the session is not started")
        result = await self.client.step(self.id, name, arguments)
        self.done = bool(result.get("done"))
        return result

    async def close(self) -> None:
        if self.id is not None:
            sid, self.id = self.id, None
            await self.client.close_session(sid)

    async def __aenter__(self) -> "AsyncSession":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


class _LoopThread:
    """An event loop on a daemon thread: where :class:`Client` runs its coroutines."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kbserve-client", daemon=True)
        self.thread.start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


def _sync(name: str):
    method = getattr(AsyncClient, name)

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return self._loop.run(getattr(self._async, name)(*args, **kwargs))

    return call


class Client:
    """The synchronous client: :class:`AsyncClient`'s methods, blocking.

    Safe to call from several threads at once (the calls share one event loop
    and its connection pool)."""

    def __init__(self, base_url: str, token: Optional[str] = None, **options):
        self._loop = _LoopThread()

        async def make():
            return AsyncClient(base_url, token, **options)

        self._async: AsyncClient = self._loop.run(make())
        self.base_url = self._async.base_url

    @property
    def retries(self) -> int:
        return self._async.retries

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run(self._async.aclose())
            self._loop.stop()
            self._loop = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def events(self, evaluation_id: str, timeout: Optional[float] = None) -> Iterator[Event]:
        agen = self._async.events(evaluation_id, timeout)
        try:
            while True:
                try:
                    yield self._loop.run(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            if self._loop is not None:
                self._loop.run(agen.aclose())

    def session(self, task: str, **options) -> "Session":
        return Session(self, task, options)


for _name in ("healthz", "readyz", "metrics", "tasks", "task", "reload_tasks", "submit", "submit_request", "get",
              "wait", "evaluate", "evaluate_request", "cancel", "batch", "reset", "step", "close_session",
              "reward_openrlhf", "reward_slime"):
    setattr(Client, _name, _sync(_name))
del _name


class Session:
    """The synchronous :class:`AsyncSession`."""

    def __init__(self, client: Client, task: str, options: dict):
        self._client = client
        self._inner = AsyncSession(client._async, task, options)

    @property
    def id(self) -> Optional[str]:
        return self._inner.id

    @property
    def reset_result(self) -> Optional[dict]:
        return self._inner.reset_result

    @property
    def done(self) -> bool:
        return self._inner.done

    def start(self) -> dict:
        return self._client._loop.run(self._inner.start())

    def step(self, name: str, arguments: Optional[Mapping[str, Any] | str] = None) -> dict:
        return self._client._loop.run(self._inner.step(name, arguments))

    def close(self) -> None:
        self._client._loop.run(self._inner.close())

    def __enter__(self) -> "Session":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
