"""veRL adapter: kbserve's toolbox as veRL tools, and a reward function.

Multi-turn (veRL's ``ToolAgentLoop``, ``actor_rollout_ref.rollout.multi_turn``):
:class:`KbserveTool` is one ``verl.tools.base_tool.BaseTool`` per kbserve tool
(write_file, verify, finish, ...), all of one trajectory sharing one kbserve
session. veRL creates and releases a tool instance around every single call,
so the session lives in the trajectory's ``agent_data.extra_fields["kbserve"]``
(opened at the trajectory's first tool call, on the task named by the tool's
``create_kwargs["task"]``, else the tool config's ``task``), and reaches the
reward function through veRL's ``tool_extra_fields``. A step that ends the
episode (``finish``, or the server's turn limit) closes the session and its
reward is the trajectory's; :func:`compute_score` calls ``finish`` itself
for a trajectory that stopped without it, so no session is left open.

Single-turn: :func:`compute_score` in veRL's ``(data_source, solution_str,
ground_truth, extra_info)`` shape sends the response to the server's
/v1/reward/openrlhf (the server takes the solution from the text: <tool_call>
write_file blocks or ```cpp blocks with a ``// file: forward.cpp`` line);
``ground_truth`` is the task id.

The server is ``base_url`` in the tool config / ``reward_kwargs``, else
``$KBSERVE_URL``; a token likewise (``token`` / ``$KBSERVE_TOKEN``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from typing import Any, Optional
from uuid import uuid4

import yaml
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from kbserve.client import AsyncClient, Client
from kbserve.errors import KbserveError, RetryExhausted, ServerError

__all__ = ["KbserveTool", "compute_score", "write_tool_config", "tools_kwargs"]

_STATE_KEY = "kbserve"
_opening: "weakref.WeakKeyDictionary[Any, asyncio.Lock]" = weakref.WeakKeyDictionary()


def _server(config: dict) -> tuple[str, Optional[str]]:
    url = config.get("base_url") or os.environ.get("KBSERVE_URL")
    if not url:
        raise KbserveError("no kbserve server: set base_url in the config or KBSERVE_URL")
    return url, config.get("token") or os.environ.get("KBSERVE_TOKEN")


class KbserveTool(BaseTool):
    """One tool of kbserve's session toolbox (its name is the schema's).

    Tool config keys: ``type: native``, ``base_url``, ``token``, ``device``
    (default cpu), ``reward`` (a scheme name; default the server's), ``task``
    (when the dataset's tools_kwargs give none)."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self.base_url, self.token = _server(config)
        self.device = config.get("device", "cpu")
        self.reward_scheme = config.get("reward")
        self._instances: dict[str, dict] = {}
        self._clients: dict[int, AsyncClient] = {}  # one per event loop

    def _client(self) -> AsyncClient:
        key = id(asyncio.get_running_loop())
        if key not in self._clients:
            self._clients[key] = AsyncClient(self.base_url, self.token)
        return self._clients[key]

    async def create(self, instance_id: Optional[str] = None, **kwargs) -> tuple[str, ToolResponse]:
        iid = instance_id or uuid4().hex
        self._instances[iid] = {"create_kwargs": dict(kwargs.get("create_kwargs") or {}), "state": None}
        return iid, ToolResponse()

    async def _session(self, instance: dict, agent_data: Any) -> dict:
        # Parallel tool calls of one turn (max_parallel_calls > 1) open one session.
        lock = _opening.setdefault(agent_data, asyncio.Lock())
        async with lock:
            return await self._open_session(instance, agent_data)

    async def _open_session(self, instance: dict, agent_data: Any) -> dict:
        state = agent_data.extra_fields.get(_STATE_KEY)
        if state is None:
            task = instance["create_kwargs"].get("task") or self.config.get("task")
            if not task:
                raise KbserveError("no task for the kbserve session: give tools_kwargs "
                                   "{tool: {'create_kwargs': {'task': ID}}} or a task in the tool config")
            reset = await self._client().reset(task, device=self.device, reward=self.reward_scheme)
            state = {"session_id": reset["session_id"], "base_url": self.base_url, "task": task,
                     "done": False, "reward": None, "status": None, "turns": 0}
            agent_data.extra_fields[_STATE_KEY] = state
        return state

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        agent_data = kwargs.get("agent_data")
        if agent_data is None:
            raise KbserveError("KbserveTool needs veRL's agent loop (execute(..., agent_data=...)), "
                               "where one trajectory's tool calls share one session")
        instance = self._instances.setdefault(instance_id, {"create_kwargs": {}, "state": None})
        state = await self._session(instance, agent_data)
        instance["state"] = state
        if state["done"]:
            return ToolResponse(text="The episode is over (finish was called); no more tool calls."), 0.0, {}
        result = await self._client().step(state["session_id"], self.name, parameters)
        state["turns"] += 1
        obs = result.get("observation", {})
        reward = 0.0
        if result.get("done"):
            info = result.get("info", {})
            state.update(done=True, reward=result.get("reward"), status=info.get("status"),
                         end_reason=info.get("end_reason"))
            reward = float(result["reward"]) if result.get("reward") is not None else 0.0
            await self._client().close_session(state["session_id"])
        metrics = {"ok": bool(obs.get("ok")), "error_kind": obs.get("error_kind")}
        return ToolResponse(text=obs.get("text", "")), reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        state = (self._instances.get(instance_id) or {}).get("state") or {}
        return float(state["reward"]) if state.get("reward") is not None else 0.0

    async def release(self, instance_id: str, **kwargs) -> None:
        self._instances.pop(instance_id, None)


def write_tool_config(path: os.PathLike | str, base_url: str, task: str, *, token: Optional[str] = None,
                      device: str = "cpu", reward: Optional[str] = None, names: Optional[list[str]] = None) -> list[str]:
    """Writes veRL's tool config YAML (``multi_turn.tool_config_path``) with one
    :class:`KbserveTool` per tool the server offers on ``task`` (their schemas
    are the server's); answers the tool names."""
    with Client(base_url, token) as c:
        reset = c.reset(task, device=device)
        c.close_session(reset["session_id"])
    specs = [s for s in reset["observation"]["tools"] if names is None or s["function"]["name"] in names]
    config: dict[str, Any] = {"type": "native", "base_url": base_url, "device": device}
    if token:
        config["token"] = token
    if reward:
        config["reward"] = reward
    tools = [{"class_name": "kbserve.adapters.verl.KbserveTool", "config": dict(config), "tool_schema": s}
             for s in specs]
    with open(path, "w") as f:
        yaml.safe_dump({"tools": tools}, f, sort_keys=False)
    return [s["function"]["name"] for s in specs]


def tools_kwargs(task: str, names: list[str]) -> dict[str, dict]:
    """A dataset row's ``extra_info["tools_kwargs"]``: every tool told the task."""
    return {n: {"create_kwargs": {"task": task}} for n in names}


_clients: dict[tuple[str, Optional[str]], Client] = {}
_clients_lock = threading.Lock()


def _sync_client(url: str, token: Optional[str]) -> Client:
    with _clients_lock:
        if (url, token) not in _clients:
            _clients[(url, token)] = Client(url, token)
        return _clients[(url, token)]


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Optional[dict] = None,
                  base_url: Optional[str] = None, token: Optional[str] = None, scheme: Optional[str] = None,
                  on_infra_error: str = "raise", **_: Any) -> dict:
    """veRL's custom reward function (``reward.custom_reward_function``, with
    ``reward_kwargs: {base_url: ...}``). Answers {"score", "correct", "status"}.

    A multi-turn trajectory (its kbserve session in ``extra_info``) scores as
    its session ended; a single-turn response is sent to the server. An
    infrastructure fault (the server's 503 after the client's retries, an
    unreachable server) never becomes a reward: it raises, or with
    ``on_infra_error="zero"`` scores 0.0 with status ``infra_error``. Bad
    input (an unknown task id) always raises."""
    url, tok = _server({"base_url": base_url, "token": token})
    client = _sync_client(url, tok)
    state = (extra_info or {}).get(_STATE_KEY)
    try:
        if isinstance(state, dict) and state.get("session_id"):
            if not state.get("done"):
                # The trajectory stopped without finish: finish judges the
                # solution as it stands and ends the session.
                result = client.step(state["session_id"], "finish", {"summary": "(ended by the trainer)"})
                info = result.get("info", {})
                state = {**state, "done": True, "reward": result.get("reward"), "status": info.get("status")}
                client.close_session(state["session_id"])
            if state.get("reward") is None:
                raise KbserveError(f"kbserve session {state['session_id']} ended without a reward "
                                   f"(status {state.get('status')})")
            score = float(state["reward"])
            status = state.get("status")
        else:
            out = client.reward_openrlhf([solution_str], [""], [ground_truth], scheme=scheme)
            score = float(out["rewards"][0])
            status = "ok" if out["extra_logs"]["correct"][0] else "not_ok"
    except KbserveError as e:
        bad_input = isinstance(e, ServerError) and e.status < 500 and not isinstance(e, RetryExhausted)
        if bad_input or on_infra_error != "zero":
            raise
        return {"score": 0.0, "correct": 0.0, "status": "infra_error"}
    return {"score": score, "correct": 1.0 if status == "ok" else 0.0, "status": status}

