"""kbserve.adapters.openenv with openenv-core's own classes: the client is an
``openenv.core.EnvClient`` driven through an episode both as itself (async
context manager) and through OpenEnv's ``SyncEnvClient`` (``.sync()``), with
OpenEnv's MCP-style ``CallToolAction`` / ``ListToolsAction`` and
``StepResult``; the replay policy writes the solution, verifies and finishes."""

from __future__ import annotations

import asyncio

import pytest

from conftest import TASK_ID, require_engine

require_engine("openenv")

from openenv.core import EnvClient, SyncEnvClient  # noqa: E402
from openenv.core.client_types import StepResult  # noqa: E402
from openenv.core.env_server.mcp_types import (CallToolAction, CallToolObservation, ListToolsAction,  # noqa: E402
                                               ToolErrorType)

from kbserve import Client, parse_metrics  # noqa: E402
from kbserve.adapters.openenv import KbserveEnv  # noqa: E402


def sessions_active(url):
    with Client(url) as c:
        return parse_metrics(c.metrics())[("kbserve_sessions_active", ())]


def test_async_episode(server, ok_files):
    async def run():
        env = KbserveEnv(server.url, task=TASK_ID, reward="correctness")
        assert isinstance(env, EnvClient)
        async with env:
            first = await env.reset()
            assert isinstance(first, StepResult) and not first.done and first.reward is None
            assert "prompt" in first.observation.result and first.observation.result["messages"]
            tools = await env.step(ListToolsAction())
            names = {t.name for t in tools.observation.tools}
            assert {"write_file", "verify", "finish"} <= names
            steps = [await env.step(CallToolAction(tool_name="write_file", arguments={
                         "path": "solution/forward.cpp", "content": ok_files["forward.cpp"]})),
                     await env.step(CallToolAction(tool_name="verify", arguments={})),
                     await env.step(CallToolAction(tool_name="finish", arguments={"summary": "host loop"}))]
            state = await env.state()
        return steps, state

    steps, state = asyncio.run(run())
    assert all(isinstance(s.observation, CallToolObservation) for s in steps)
    assert [s.done for s in steps] == [False, False, True]
    assert [s.reward for s in steps] == [None, None, 1.0]
    assert steps[1].observation.error is None and steps[1].observation.result["ok"]
    assert state.step_count == 3 and state.done and state.info["status"] == "ok"
    assert sessions_active(server.url) == 0


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
        # A second episode on the same client.
        again = env.reset()
        assert again.observation.metadata["session_id"] != end.observation.metadata["session_id"]
    assert sessions_active(server.url) == 0


def test_step_before_reset_is_an_error(server):
    async def run():
        async with KbserveEnv(server.url) as env:
            with pytest.raises(Exception, match="before reset"):
                await env.step(CallToolAction(tool_name="verify", arguments={}))
            with pytest.raises(Exception, match="needs a task"):
                await env.reset()

    asyncio.run(run())
