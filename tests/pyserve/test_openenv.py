"""kbserve.adapters.openenv with openenv-core's own classes over kbserve's
/ws: the client is an ``openenv.core.EnvClient`` whose WebSocket transport
(connect, the reset / step / state / close messages, disconnect) is
EnvClient's own code, driven through an episode both as itself (async
context manager) and through OpenEnv's ``SyncEnvClient`` (``.sync()``), with
OpenEnv's MCP-style ``CallToolAction`` / ``ListToolsAction`` and
``StepResult``; OpenEnv's own ``MCPToolClient`` and ``GenericEnvClient``,
unchanged, play episodes too. The replay policy writes the solution, verifies and finishes."""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import TASK_ID, require_engine, start_server

require_engine("openenv")

from openenv.core import EnvClient, SyncEnvClient  # noqa: E402
from openenv.core.client_types import StepResult  # noqa: E402
from openenv.core.env_server.mcp_types import (CallToolAction, CallToolObservation, ListToolsAction,  # noqa: E402
                                               ToolErrorType)
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402
from websockets.asyncio.client import ClientConnection  # noqa: E402

from kbserve import Client, parse_metrics  # noqa: E402
from kbserve.adapters.openenv import KbserveEnv  # noqa: E402


def gauge(url, name, token=None):
    with Client(url, token=token) as c:
        return parse_metrics(c.metrics())[(name, ())]


def settles_to_zero(url, name, token=None, seconds=10.0):
    """The server closes a connection's session once it has seen the close: soon, not at once."""
    deadline = time.monotonic() + seconds
    while gauge(url, name, token) != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return gauge(url, name, token) == 0


def test_transport_is_envclients():
    # The adapter converts; EnvClient moves the messages.
    for method in ("step", "state", "disconnect", "_send", "_receive", "_send_and_receive"):
        assert method not in KbserveEnv.__dict__, method


def test_async_episode(server, ok_files):
    async def run():
        env = KbserveEnv(server.url, task=TASK_ID, reward="correctness")
        assert isinstance(env, EnvClient)
        async with env:
            assert isinstance(env._ws, ClientConnection)  # a WebSocket to {base}/ws
            first = await env.reset()
            assert isinstance(first, StepResult) and not first.done and first.reward is None
            assert "prompt" in first.observation.result and first.observation.result["messages"]
            session_id = first.observation.metadata["session_id"]
            assert gauge(server.url, "kbserve_websocket_connections") == 1
            tools = await env.step(ListToolsAction())
            names = {t.name for t in tools.observation.tools}
            assert {"write_file", "verify", "finish"} <= names
            steps = [await env.step(CallToolAction(tool_name="write_file", arguments={
                         "path": "solution/forward.cpp", "content": ok_files["forward.cpp"]})),
                     await env.step(CallToolAction(tool_name="verify", arguments={})),
                     await env.step(CallToolAction(tool_name="finish", arguments={"summary": "host loop"}))]
            state = await env.state()
        return session_id, steps, state

    session_id, steps, state = asyncio.run(run())
    assert all(isinstance(s.observation, CallToolObservation) for s in steps)
    assert [s.done for s in steps] == [False, False, True]
    assert [s.reward for s in steps] == [None, None, 1.0]
    assert steps[1].observation.error is None and steps[1].observation.result["ok"]
    assert state.episode_id == session_id and state.step_count == 3
    assert state.done and state.info["status"] == "ok"
    assert settles_to_zero(server.url, "kbserve_sessions_active")
    assert settles_to_zero(server.url, "kbserve_websocket_connections")


def test_sync_client_episode_with_failures(server, wrong_files):
    env = KbserveEnv(server.url, task=TASK_ID, reward="correctness").sync()
    assert isinstance(env, SyncEnvClient)
    with env:
        env.reset()
        bad = env.step({"tool_name": "write_file", "arguments": {"path": "../outside.cpp", "content": "x"}})
        assert bad.observation.error is not None and not bad.done  # a refused call is an observation
        assert bad.observation.error.error_type == ToolErrorType.INVALID_ARGS
        env.step(CallToolAction(tool_name="write_file", arguments={"path": "solution/forward.cpp",
                                                                   "content": wrong_files["forward.cpp"]}))
        verify = env.step(CallToolAction(tool_name="verify", arguments={}))
        # The tool ran: its verdict is the result, not a tool error.
        assert verify.observation.error is None
        assert verify.observation.result["detail"]["status"] == "incorrect"
        assert verify.observation.result["text"].startswith("incorrect")
        unknown = env.step(CallToolAction(tool_name="no_such_tool", arguments={}))
        assert unknown.observation.error.error_type == ToolErrorType.TOOL_NOT_FOUND
        end = env.step(CallToolAction(tool_name="finish", arguments={}))
        assert end.done and end.reward == -1.0
        with pytest.raises(RuntimeError, match="SESSION_ERROR"):  # the episode is over
            env.step(CallToolAction(tool_name="verify", arguments={}))
        # A second episode on the same connection; the first session is closed.
        again = env.reset()
        assert again.observation.metadata["session_id"] != end.observation.metadata["session_id"]
        assert gauge(server.url, "kbserve_sessions_active") == 1
    assert settles_to_zero(server.url, "kbserve_sessions_active")


def test_concurrent_episodes(server, ok_files, wrong_files):
    """Six connections at once, each its own session: every reward its own."""
    async def episode(files):
        async with KbserveEnv(server.url, task=TASK_ID, reward="correctness") as env:
            await env.reset()
            await env.step(CallToolAction(tool_name="write_file", arguments={
                "path": "solution/forward.cpp", "content": files["forward.cpp"]}))
            await env.step(CallToolAction(tool_name="verify", arguments={}))
            end = await env.step(CallToolAction(tool_name="finish", arguments={}))
            return end.reward, end.observation.metadata["session_id"]

    async def run():
        return await asyncio.gather(*(episode(ok_files if i % 2 == 0 else wrong_files) for i in range(6)))

    results = asyncio.run(run())
    assert [r for r, _ in results] == [1.0, -1.0] * 3
    assert len({sid for _, sid in results}) == 6
    assert settles_to_zero(server.url, "kbserve_sessions_active")
    assert settles_to_zero(server.url, "kbserve_websocket_connections")


def test_openenv_mcp_tool_client_plays_an_episode(server, ok_files):
    """OpenEnv's own MCP tool client, not a line of kbserve's, over /ws."""
    async def run():
        async with MCPToolClient(base_url=server.url) as env:
            await env.reset(task=TASK_ID, reward="correctness")
            names = {t.name for t in await env.list_tools()}
            wrote = await env.call_tool("write_file", path="solution/forward.cpp", content=ok_files["forward.cpp"])
            verified = await env.call_tool("verify")
            end = await env.step(CallToolAction(tool_name="finish", arguments={}))
            return names, wrote, verified, end

    names, wrote, verified, end = asyncio.run(run())
    assert {"bash", "write_file", "verify", "finish"} <= names
    assert wrote["ok"] and verified["ok"] and verified["detail"]["status"] == "ok"
    assert end.done and end.reward == 1.0
    assert settles_to_zero(server.url, "kbserve_sessions_active")


def test_openenv_generic_client_takes_raw_messages(server):
    """OpenEnv's GenericEnvClient: actions and observations as plain dicts."""
    async def run():
        async with GenericEnvClient(base_url=server.url) as env:
            first = await env.reset(task=TASK_ID, reward="correctness")
            end = await env.step({"type": "call_tool", "tool_name": "finish", "arguments": {}})
            return first, end, await env.state()

    first, end, state = asyncio.run(run())
    assert first.observation["tool_name"] == "reset" and first.observation["result"]["tools"]
    assert end.done and end.reward == -1.0  # finished without a solution
    assert end.observation["metadata"]["info"]["end_reason"] == "finish"
    assert state["episode_id"] == first.observation["metadata"]["session_id"] and state["step_count"] == 1


def test_refusals_are_server_errors_and_the_connection_survives(server):
    async def run():
        async with KbserveEnv(server.url) as env:
            with pytest.raises(RuntimeError, match="send reset first.*SESSION_ERROR"):
                await env.step(CallToolAction(tool_name="verify", arguments={}))
            with pytest.raises(ValueError, match="needs a task"):
                await env.reset()
            with pytest.raises(RuntimeError, match="no task.*VALIDATION_ERROR"):
                await env.reset(task="no/such/task")
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.reset(task=TASK_ID, device="tpu")
            state = await env.state()  # before any episode: OpenEnv's empty State
            assert state.episode_id is None and state.step_count == 0
            ok = await env.reset(task=TASK_ID)
            assert not ok.done

    asyncio.run(run())


def test_leaving_mid_episode_closes_the_session(server):
    async def run():
        env = KbserveEnv(server.url, task=TASK_ID)
        await env.connect()
        await env.reset()
        assert gauge(server.url, "kbserve_sessions_active") == 1
        await env._ws.close()  # gone without OpenEnv's close message

    asyncio.run(run())
    assert settles_to_zero(server.url, "kbserve_sessions_active")


def test_bearer_token(kbserve_bin, tmp_path):
    token = "pyserve-token-0123456789abcdef"
    (tmp_path / "token").write_text(token + "\n")
    srv = start_server(kbserve_bin, tmp_path, token_file=tmp_path / "token")
    try:
        async def run():
            with pytest.raises(ConnectionError, match="401"):
                await KbserveEnv(srv.url, task=TASK_ID).connect()
            with pytest.raises(ConnectionError, match="401"):
                await KbserveEnv(srv.url, task=TASK_ID, token="x" * len(token)).connect()
            async with KbserveEnv(srv.url, task=TASK_ID, token=token) as env:
                r = await env.reset()
                return r.observation.metadata["session_id"]

        assert asyncio.run(run()).startswith("se-")
        assert settles_to_zero(srv.url, "kbserve_sessions_active", token=token)
    finally:
        srv.stop()
