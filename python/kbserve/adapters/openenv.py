"""OpenEnv adapter: kbserve sessions as an OpenEnv environment client.

:class:`KbserveEnv` is an ``openenv.core.EnvClient`` (async; ``.sync()``
gives OpenEnv's own ``SyncEnvClient``) that talks to kbserve's ``/ws`` with
EnvClient's own transport: OpenEnv's WebSocket messages (reset / step /
state / close), sent and received by EnvClient's code. kbserve serves that
protocol (docs/kbserve.md "Sessions over a WebSocket"), so this class only
converts: ``reset()`` opens a session on a task and answers
``StepResult[CallToolObservation]`` whose ``result`` holds the prompt, the
chat messages and the tools; ``step(CallToolAction(tool_name=...,
arguments=...))`` runs one tool call (``ListToolsAction`` lists the tools);
``state()`` is an OpenEnv ``State`` whose ``episode_id`` is the session id.
The action and observation types are OpenEnv's own MCP-style tool types,
and the server sends them in the shapes OpenEnv's ``MCPToolClient`` parses.
A call the toolbox refuses (bad arguments, an unknown tool, a path outside
the workspace) is an observation with ``error`` set, never an exception; a
stage's verdict is the tool's result (``result["text"]``, and
``result["detail"]["status"]``: compile_error, incorrect, ok, ...). The
episode's reward comes with the step that ends it (``finish`` or the
server's turn limit). A server refusal (unknown task, step before reset,
the session limit) is EnvClient's ``RuntimeError("Server error: ...")``.

The one override of EnvClient's transport is ``connect`` when a token is
given: the handshake then carries ``Authorization: Bearer TOKEN`` (EnvClient
sends no headers).
"""

from __future__ import annotations

from typing import Any, Optional
from urllib.parse import urlparse

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.mcp_types import (CallToolAction, CallToolObservation, ListToolsAction,
                                               ListToolsObservation, Tool, ToolError)
from openenv.core.env_server.types import State
from websockets.asyncio.client import connect as ws_connect

__all__ = ["KbserveEnv"]

_LOOPBACK = ("localhost", "127.0.0.1", "::1")


class KbserveEnv(EnvClient[CallToolAction, CallToolObservation, State]):
    """An OpenEnv client of one kbserve session at a time (its WebSocket
    connection holds it; the server closes it with the connection).

    ``task`` is the default task of ``reset()`` (``reset(task=...)`` picks
    another); ``device`` and ``reward`` (a scheme name) go to the session."""

    def __init__(self, base_url: str, task: Optional[str] = None, *, token: Optional[str] = None,
                 device: str = "cpu", reward: Optional[str] = None, message_timeout_s: float = 900.0, **kwargs):
        super().__init__(base_url=base_url, message_timeout_s=message_timeout_s, **kwargs)
        self._token = token
        self._task, self._device, self._reward = task, device, reward

    async def connect(self) -> "KbserveEnv":
        if self._token is None:
            return await super().connect()
        if self._ws is None:
            loopback = urlparse(self._ws_url).hostname in _LOOPBACK
            try:
                self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout,
                                            max_size=self._max_message_size, proxy=None if loopback else True,
                                            additional_headers={"Authorization": f"Bearer {self._token}"})
            except Exception as e:
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {e}") from e
        return self

    async def reset(self, task: Optional[str] = None, **kwargs: Any) -> StepResult[CallToolObservation]:
        """A new episode on ``task`` (the connection's previous session is closed)."""
        task = task or self._task
        if not task:
            raise ValueError("reset() needs a task: KbserveEnv(url, task=...) or reset(task=...)")
        data = {"task": task, "device": kwargs.pop("device", self._device)}
        reward = kwargs.pop("reward", self._reward)
        if reward is not None:
            data["reward"] = reward
        return await super().reset(**data, **kwargs)

    # -- EnvClient's conversions -------------------------------------------

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, ListToolsAction):
            return {"type": "list_tools"}
        if isinstance(action, CallToolAction):
            return {"type": "call_tool", "tool_name": action.tool_name, "arguments": action.arguments}
        if isinstance(action, dict):
            if action.get("type") == "list_tools":
                return {"type": "list_tools"}
            name = action.get("tool_name") or action.get("name")
            if not name:
                raise ValueError("the action names no tool")
            return {"type": "call_tool", "tool_name": name, "arguments": action.get("arguments") or {}}
        raise TypeError(f"a KbserveEnv action is a CallToolAction, a ListToolsAction or a dict, not {type(action).__name__}")

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CallToolObservation]:
        obs = payload.get("observation", {})
        reward, done = payload.get("reward"), bool(payload.get("done"))
        if "tools" in obs:
            tools = [Tool(name=t["name"], description=t.get("description", ""), input_schema=t.get("input_schema", {}))
                     for t in obs["tools"]]
            observation = ListToolsObservation(tools=tools, done=done, reward=reward, metadata=obs.get("metadata", {}))
        else:
            error = ToolError(**obs["error"]) if obs.get("error") else None
            observation = CallToolObservation(tool_name=obs.get("tool_name", ""), result=obs.get("result"), error=error,
                                              done=done, reward=reward, metadata=obs.get("metadata", {}))
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)
