"""kbserve.ray_pool on a real two-node Ray cluster on this machine
(ray.cluster_utils.Cluster: a head and a second node, each its own raylet):
one kbserve per node, task bundles shipped by content hash through the
object store, CPU evaluations routed to the least-loaded node, at least one
landing on each node."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import TASK_ID, TASKS, read_files, require_engine

require_engine("ray")

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from kbserve.bundles import bundle_hash  # noqa: E402
from kbserve.client import evaluation_request  # noqa: E402
from kbserve.ray_pool import KbservePool  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"head": 1}, "object_store_memory": 80 << 20,
        "include_dashboard": False})
    c.add_node(num_cpus=1, resources={"second": 1}, object_store_memory=80 << 20)
    c.wait_for_nodes()
    # The package reaches the nodes with the job, as on a real cluster whose
    # nodes do not have it installed.
    import kbserve
    ray.init(address=c.address, log_to_driver=False,
             runtime_env={"py_modules": [str(Path(kbserve.__file__).parent)]})
    yield c
    ray.shutdown()
    c.shutdown()


def test_two_nodes_route_and_ship_by_hash(cluster, kbserve_bin, tmp_path):
    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    assert len(nodes) == 2
    pool = KbservePool.start(binary=kbserve_bin, work_dir=str(tmp_path), cpu_slots=1)
    try:
        infos = pool.node_infos()
        assert sorted(i["node_id"] for i in infos) == sorted(nodes)
        assert all(i["gpus"] == [] for i in infos)          # CPU nodes: no GPU held
        assert len({i["work_dir"] for i in infos}) == 2     # node-local task dirs, nothing shared
        assert all(i["url"] is None for i in infos)         # no bundle yet, so no server yet

        b = pool.add_task(TASKS / "linear_relu")
        assert b.task_id == TASK_ID and b.content_hash == bundle_hash(TASKS / "linear_relu")

        ok, wrong = read_files("ok_linear_relu"), read_files("wrong_result")
        reqs = [evaluation_request(TASK_ID, f, reward="correctness") for f in (ok, wrong, ok, ok, wrong, ok)]
        out = pool.evaluate_requests(reqs, timeout=300)
        assert [e["status"] for e in out] == ["ok", "incorrect", "ok", "ok", "incorrect", "ok"]
        assert [e["reward"]["value"] for e in out] == [1.0, -1.0, 1.0, 1.0, -1.0, 1.0]
        landed = {e["kbserve_node"]["node_id"] for e in out}
        assert landed == set(nodes), "every node must have served at least one evaluation"

        infos = pool.node_infos()
        for info in infos:
            # Each node received the bundle by hash, unpacked it in its own
            # directory and its server reports the same hash.
            assert info["tasks"] == {TASK_ID: b.content_hash}
            local = Path(info["work_dir"]) / "tasks" / b.content_hash.replace(":", "-")
            assert bundle_hash(local) == b.content_hash
            assert info["url"] and info["evaluated"] >= 1
            assert "0 GPUs" in (Path(info["work_dir"]) / "kbserve.log").read_text()  # --gpus none on a CPU node

        # A second task added later reaches the running servers (reload, no restart).
        b2 = pool.add_task(TASKS / "scale_and_rowsum")
        ev = pool.evaluate(b2.task_id, read_files("ok_scale_and_rowsum"), timeout=300)
        assert ev["status"] == "ok", ev
        served = next(i for i in pool.node_infos() if i["node_id"] == ev["kbserve_node"]["node_id"])
        assert served["reload_supported"] is True and served["restarts"] == 0
        assert b2.task_id in served["tasks"]

        loads = pool.loads()
        assert all(l["inflight"] == 0 for l in loads)
    finally:
        pool.shutdown()


def test_restart_refresh(cluster, kbserve_bin, tmp_path):
    # The fallback for a server without /v1/tasks/reload: a restart once idle.
    head = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and "head" in n["Resources"])
    pool = KbservePool.start(binary=kbserve_bin, nodes=[head], work_dir=str(tmp_path), cpu_slots=1,
                             refresh="restart")
    try:
        pool.add_task(TASKS / "linear_relu")
        assert pool.evaluate(TASK_ID, read_files("ok_linear_relu"), timeout=300)["status"] == "ok"
        b2 = pool.add_task(TASKS / "scale_and_rowsum")
        assert pool.evaluate(b2.task_id, read_files("ok_scale_and_rowsum"), timeout=300)["status"] == "ok"
        info = pool.node_infos()[0]
        assert info["restarts"] == 1 and set(info["tasks"]) == {TASK_ID, b2.task_id}
        # The first task is still served after the restart.
        assert pool.evaluate(TASK_ID, read_files("wrong_result"), timeout=300)["status"] == "incorrect"
    finally:
        pool.shutdown()


def test_unknown_task_and_cuda_refused(cluster, kbserve_bin, tmp_path):
    head = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and "head" in n["Resources"])
    pool = KbservePool.start(binary=kbserve_bin, nodes=[head], work_dir=str(tmp_path))
    try:
        from kbserve.errors import KbserveError, NotFound
        with pytest.raises(NotFound):
            pool.evaluate("testdata/not_added", {"forward.cpp": ""})
        pool.add_task(TASKS / "linear_relu")
        with pytest.raises(KbserveError, match="device 'cuda'"):
            pool.evaluate(TASK_ID, read_files("ok_linear_relu"), device="cuda")
    finally:
        pool.shutdown()
