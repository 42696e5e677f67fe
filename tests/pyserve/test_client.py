"""kbserve.client against a real kbserve: evaluations (submit, wait, get,
events, cancel, batch), 429 retries, errors, idempotency, auth, sessions and
the engine reward endpoints."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from conftest import TASK_ID, TASKS, read_files, start_server
from kbserve import (AsyncClient, BadRequest, Client, Conflict, NotFound, PayloadTooLarge, RetryExhausted,
                     Unauthorized, Unprocessable, evaluation_request, parse_metrics)
from kbserve.bundles import bundle_hash


@pytest.fixture(scope="module")
def client(server):
    with Client(server.url) as c:
        yield c


def test_health_tasks_and_hash(client):
    assert client.healthz() == {"status": "ok"}
    assert client.readyz() is True
    ids = [t["id"] for t in client.tasks()]
    assert TASK_ID in ids
    t = client.task(TASK_ID)
    assert t["id"] == TASK_ID and t["device"] == "cpu"
    # The content hash the server reports is the one kbserve.bundles computes.
    assert t["content_hash"] == bundle_hash(TASKS / "linear_relu")
    m = parse_metrics(client.metrics())
    assert ("kbserve_queue_depth", ()) in m and ("kbserve_running", ()) in m
    with pytest.raises(NotFound):
        client.task("testdata/no_such_task")


def test_evaluate_ok_and_incorrect(client, ok_files, wrong_files):
    ok = client.evaluate(TASK_ID, ok_files, reward="correctness", timeout=300)
    assert ok["state"] == "done" and ok["status"] == "ok", ok
    assert ok["reward"]["value"] == 1.0
    assert ok["report"]["status"] == "ok"
    bad = client.evaluate(TASK_ID, wrong_files, reward="correctness", timeout=300)
    assert bad["state"] == "done" and bad["status"] == "incorrect", bad
    assert bad["reward"]["value"] == -1.0
    done = parse_metrics(client.metrics())
    assert done[("kbserve_evaluations_total", (("status", "ok"),))] >= 1
    assert done[("kbserve_evaluations_total", (("status", "incorrect"),))] >= 1


def test_submit_wait_get_events(client, ok_files):
    ev = client.submit(TASK_ID, ok_files)
    assert ev["state"] in ("queued", "running", "done") and ev["id"]
    events = list(client.events(ev["id"], timeout=300))
    kinds = [e.event for e in events]
    assert kinds[-1] == "done", kinds
    assert "stage" in kinds, kinds
    assert events[-1].data["status"] == "ok", events[-1].data
    waited = client.wait(ev["id"], timeout=300)
    assert waited["state"] == "done" and waited["status"] == "ok"
    got = client.get(ev["id"])
    assert got["id"] == ev["id"] and got["status"] == "ok"
    with pytest.raises(NotFound):
        client.get("ev-0000000000000000")


def test_async_client_concurrent(server, ok_files, wrong_files):
    async def run():
        async with AsyncClient(server.url) as c:
            evs = await asyncio.gather(*[c.evaluate(TASK_ID, f, timeout=300)
                                         for f in (ok_files, wrong_files, ok_files)])
            events = [e async for e in c.events(evs[0]["id"])]
            return evs, events

    evs, events = asyncio.run(run())
    assert [e["status"] for e in evs] == ["ok", "incorrect", "ok"]
    assert events[-1].event == "done"


def test_batch(client, ok_files, wrong_files):
    reqs = [evaluation_request(TASK_ID, ok_files), evaluation_request(TASK_ID, wrong_files, priority=9)]
    out = client.batch(reqs, wait=True, timeout_s=300)
    assert [e["status"] for e in out] == ["ok", "incorrect"]
    # A batch is refused whole when one request is bad.
    with pytest.raises(Unprocessable):
        client.batch([evaluation_request(TASK_ID, ok_files), evaluation_request(TASK_ID, {"../x.cpp": "int x;"})])


def test_errors(client, ok_files):
    with pytest.raises(NotFound):
        client.submit("testdata/no_such_task", ok_files)
    with pytest.raises(Unprocessable):
        client.submit(TASK_ID, {"../escape.cpp": "int x;"})
    with pytest.raises(PayloadTooLarge):
        client.submit(TASK_ID, {"forward.cpp": "x" * (2 << 20)})
    with pytest.raises(BadRequest):
        client._loop.run(client._async._json("POST", "/v1/evaluations", json_body={"files": "not a map"}))
    with pytest.raises(TypeError):
        client.submit(TASK_ID, "forward.cpp")


def test_idempotency(client, ok_files, wrong_files):
    key = f"pyserve-{time.time_ns()}"
    a = client.submit(TASK_ID, ok_files, idempotency_key=key)
    b = client.submit(TASK_ID, ok_files, idempotency_key=key)
    assert a["id"] == b["id"]
    with pytest.raises(Conflict):
        client.submit(TASK_ID, wrong_files, idempotency_key=key)
    assert client.wait(a["id"], timeout=300)["status"] == "ok"


def test_session_episode(client, ok_files):
    with client.session(TASK_ID, reward="correctness") as s:
        obs = s.reset_result["observation"]
        assert "prompt" in obs and obs["prompt"]
        names = {t["function"]["name"] for t in obs["tools"]}
        assert {"write_file", "verify", "finish"} <= names
        w = s.step("write_file", {"path": "solution/forward.cpp", "content": ok_files["forward.cpp"]})
        assert w["observation"]["ok"] and not w["done"] and w["reward"] is None
        v = s.step("verify")
        assert v["observation"]["ok"], v["observation"]["text"]
        f = s.step("finish", {"summary": "the reference loop"})
        assert f["done"] and f["reward"] == 1.0, f
        with pytest.raises(Conflict):
            s.step("verify")
        sid = s.id
    with pytest.raises(NotFound):
        client.close_session(sid)


def test_engine_reward_endpoints(client, ok_files, wrong_files):
    good = "Here it is.\n```cpp\n// file: forward.cpp\n" + ok_files["forward.cpp"] + "```\n"
    bad = "```cpp\n// file: forward.cpp\n" + wrong_files["forward.cpp"] + "```\n"
    out = client.reward_openrlhf([good, bad], ["", ""], [TASK_ID, TASK_ID])
    assert out["rewards"] == [1.0, -1.0], out
    assert out["extra_logs"]["correct"] == [1.0, 0.0]
    assert client.reward_slime("", good, TASK_ID) == 1.0


@pytest.fixture(scope="module")
def busy_server(kbserve_bin, tmp_path_factory):
    # One CPU slot, a queue of one and a short verification limit, so that a
    # sleeping solution holds the queue for a few seconds.
    srv = start_server(kbserve_bin, tmp_path_factory.mktemp("busy"), "--queue-limit", "1", "--verify-timeout", "3",
                       cpu_slots=1)
    yield srv
    srv.stop()


def test_queue_full_retry_after(busy_server, ok_files):
    slow = read_files("sleep_past_limit")
    with Client(busy_server.url, max_retries=0) as impatient, Client(busy_server.url, max_retries=30) as patient:
        first = impatient.submit(TASK_ID, slow)
        with pytest.raises(RetryExhausted) as refused:
            impatient.submit(TASK_ID, ok_files)
        assert refused.value.status == 429 and refused.value.retry_after >= 1
        t0 = time.monotonic()
        ev = patient.evaluate(TASK_ID, ok_files, timeout=300)  # waits out the 429s
        assert ev["status"] == "ok" and patient.retries >= 1
        assert time.monotonic() - t0 >= 0.5
        assert impatient.wait(first["id"], timeout=300)["status"] == "timeout"
        rejected = parse_metrics(impatient.metrics())
        assert rejected[("kbserve_rejected_total", (("reason", "queue_full"),))] >= 2


def test_cancel_queued(kbserve_bin, tmp_path, ok_files):
    srv = start_server(kbserve_bin, tmp_path, "--verify-timeout", "3", cpu_slots=1)
    try:
        with Client(srv.url) as c:
            slow = c.submit(TASK_ID, read_files("sleep_past_limit"), priority=9)
            queued = c.submit(TASK_ID, ok_files, priority=0)
            cancelled = c.cancel(queued["id"])
            assert cancelled["state"] == "cancelled", cancelled
            assert c.wait(queued["id"], timeout=60)["state"] == "cancelled"
            events = list(c.events(queued["id"], timeout=60))
            assert events[-1].event == "done"
            assert c.wait(slow["id"], timeout=300)["status"] == "timeout"
    finally:
        srv.stop()


def test_bearer_token(kbserve_bin, tmp_path, ok_files):
    token = "pyserve-token-0123456789abcdef"
    (tmp_path / "token").write_text(token + "\n")
    srv = start_server(kbserve_bin, tmp_path, token_file=tmp_path / "token")
    try:
        with Client(srv.url, token="") as anonymous:
            assert anonymous.healthz()["status"] == "ok"
            with pytest.raises(Unauthorized):
                anonymous.tasks()
        with Client(srv.url, token=token) as c:
            assert c.evaluate(TASK_ID, ok_files, timeout=300)["status"] == "ok"
    finally:
        srv.stop()


def test_sync_client_from_threads(client, ok_files):
    results = []

    def one():
        results.append(client.evaluate(TASK_ID, ok_files, timeout=300)["status"])

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["ok"] * 3
