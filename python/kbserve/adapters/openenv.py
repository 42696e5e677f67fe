"""OpenEnv adapter: kbserve sessions as an OpenEnv environment client.

:class:`KbserveEnv` is an ``openenv.core.EnvClient`` (async; ``.sync()``
gives OpenEnv's own ``SyncEnvClient``): ``reset()`` opens a session on a
task and answers ``StepResult[CallToolObservation]`` whose ``result`` holds
the prompt, the chat messages and the tools; ``step(CallToolAction(
tool_name=..., arguments=...))`` runs one tool call (``ListToolsAction``
lists the tools); ``state()`` is an OpenEnv ``State`` whose ``episode_id`` is
the session id. The action and observation types are OpenEnv's own MCP-style
tool types. A call the toolbox refuses (bad arguments, an unknown tool, a
path outside the workspace) is an observation with ``error`` set, never an
exception; a stage's verdict is the tool's result (``result["text"]``, and
``result["detail"]["status"]``: compile_error, incorrect, ok, ...). The
episode's reward comes with the step that ends it (``finish`` or the
server's turn limit).

kbserve speaks HTTP/JSON, not OpenEnv's WebSocket protocol, so this client
overrides EnvClient's transport (connect, reset, step, state, disconnect)
and keeps its interface; ``base_url`` is the kbserve server.
"""

from __future__ import annotations

from typing import Any, Optional

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.mcp_types import (CallToolAction, CallToolObservation, ListToolsAction,
                                               ListToolsObservation, Tool, ToolError, ToolErrorType)
from openenv.core.env_server.types import State

from kbserve.client import AsyncClient
from kbserve.errors import KbserveError

__all__ = ["KbserveEnv"]

# The toolbox's error_kind (lib/agent/tools.cpp) -> OpenEnv's; any other kind
# (io_error, sandbox_error, infra_error, ...) is an execution error.
_ERROR_TYPES = {"bad_arguments": ToolErrorType.INVALID_ARGS, "path_refused": ToolErrorType.INVALID_ARGS,
                "unknown_tool": ToolErrorType.TOOL_NOT_FOUND, "timeout": ToolErrorType.TIMEOUT}


class KbserveEnv(EnvClient[CallToolAction, CallToolObservation, State]):
    """An OpenEnv client of one kbserve session at a time.

    ``task`` is the default task of ``reset()`` (``reset(task=...)`` picks
    another); ``device`` and ``reward`` (a scheme name) go to the session."""

    def __init__(self, base_url: str, task: Optional[str] = None, *, token: Optional[str] = None,
                 device: str = "cpu", reward: Optional[str] = None, message_timeout_s: float = 900.0, **kwargs):
        super().__init__(base_url=base_url, message_timeout_s=message_timeout_s, **kwargs)
        self._base_url = base_url
        self._token = token
        self._task, self._device, self._reward = task, device, reward
        self._client: Optional[AsyncClient] = None
        self._session_id: Optional[str] = None
        self._tools: list[dict] = []
        self._steps = 0
        self._done = False
        self._last_info: dict = {}

    # -- transport: kbserve's HTTP API instead of OpenEnv's WebSocket ------

    async def connect(self) -> "KbserveEnv":
        if self._client is None:
            self._client = AsyncClient(self._base_url, self._token, timeout=self._message_timeout)
            await self._client.healthz()
        return self

    async def disconnect(self) -> None:
        await self._end_session()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _end_session(self) -> None:
        if self._session_id is not None and self._client is not None:
            sid, self._session_id = self._session_id, None
            try:
                await self._client.close_session(sid)
            except KbserveError:
                pass  # already expired on the server

    async def reset(self, task: Optional[str] = None, **kwargs: Any) -> StepResult[CallToolObservation]:
        """A new episode (the previous session is closed)."""
        await self.connect()
        await self._end_session()
        task = task or self._task
        if not task:
            raise KbserveError("reset() needs a task: KbserveEnv(url, task=...) or reset(task=...)")
        r = await self._client.reset(task, device=kwargs.get("device", self._device),
                                     reward=kwargs.get("reward", self._reward))
        self._session_id, self._steps, self._done = r["session_id"], 0, False
        self._tools = r["observation"]["tools"]
        self._last_info = r.get("info", {})
        obs = r["observation"]
        return StepResult(
            observation=CallToolObservation(tool_name="reset", result=obs, done=False, reward=None,
                                            metadata={"session_id": self._session_id, "info": self._last_info}),
            reward=None, done=False)

    async def step(self, action: Any, **kwargs: Any) -> StepResult[CallToolObservation]:
        """One tool call: a ``CallToolAction`` (or {"tool_name", "arguments"});
        a ``ListToolsAction`` answers the tools without a server call."""
        if isinstance(action, ListToolsAction) or (isinstance(action, dict) and action.get("type") == "list_tools"):
            tools = [Tool(name=t["function"]["name"], description=t["function"].get("description", ""),
                          input_schema=t["function"].get("parameters", {})) for t in self._tools]
            return StepResult(observation=ListToolsObservation(tools=tools), reward=None, done=self._done)
        if self._session_id is None:
            raise KbserveError("step() before reset() (or after the episode ended and the session closed)")
        payload = self._step_payload(action)
        result = await self._client.step(self._session_id, payload["tool_call"]["name"],
                                         payload["tool_call"]["arguments"])
        self._steps += 1
        parsed = self._parse_result(result)
        if parsed.done:
            self._done = True
            self._last_info = result.get("info", {})
            await self._end_session()  # the server holds a done session until closed
        return parsed

    async def state(self) -> State:
        return self._parse_state({"episode_id": self._session_id, "step_count": self._steps, "task": self._task,
                                  "done": self._done, "info": self._last_info})

    async def close(self) -> None:
        await self.disconnect()

    # -- EnvClient's conversions -------------------------------------------

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, CallToolAction):
            name, args = action.tool_name, action.arguments
        elif isinstance(action, dict):
            name = action.get("tool_name") or action.get("name")
            args = action.get("arguments", {})
        else:
            raise TypeError(f"a KbserveEnv action is a CallToolAction or a dict, not {type(action).__name__}")
        if not name:
            raise ValueError("the action names no tool")
        return {"tool_call": {"name": name, "arguments": args or {}}}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CallToolObservation]:
        obs = payload.get("observation", {})
        info = payload.get("info", {}) or {}
        error = None
        if not obs.get("ok", True):
            kind = obs.get("error_kind") or ""
            error = ToolError(error_type=_ERROR_TYPES.get(kind, ToolErrorType.EXECUTION_ERROR),
                              message=(obs.get("text") or kind)[:4000])
        observation = CallToolObservation(tool_name=info.get("tool", ""), result=obs, error=error,
                                          done=bool(payload.get("done")), reward=payload.get("reward"),
                                          metadata={"session_id": self._session_id, "info": info})
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(episode_id=payload.get("episode_id"), step_count=payload.get("step_count", 0),
                     **{k: v for k, v in payload.items() if k not in ("episode_id", "step_count")})
