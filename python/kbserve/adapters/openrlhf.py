"""OpenRLHF adapter: a multi-turn agent over a kbserve session.

Pass this file as OpenRLHF's agent (``--train.agent_func_path
/path/to/kbserve/adapters/openrlhf.py``; OpenRLHF loads the file and builds
its ``AgentExecutor``). Each prompt gets an :class:`AgentInstance`: ``reset``
opens a kbserve session on the task named by the sample's label (a task id,
or JSON ``{"task": ID}``), ``step`` runs the ``<tool_call>{"name", "arguments"}
</tool_call>`` blocks of the model's reply as session tool calls and answers
their observations as the environment's feedback. The episode ends when the
server says done (``finish``, or its turn limit) or when a reply carries no
tool call (then ``finish`` is called for it); its reward is the server's,
given on the last step. A rollout that OpenRLHF cuts at its length budget
is finished the same way by :class:`AgentExecutor`, its reward added then,
so no session is left open.

The single-turn remote reward needs no code: ``--reward.remote_url
http://HOST:PORT/v1/reward/openrlhf`` is the server itself.

The server is ``$KBSERVE_URL`` (token ``$KBSERVE_TOKEN``); the device
``$KBSERVE_DEVICE`` (default cpu) and the reward scheme ``$KBSERVE_REWARD``
(default the server's). The feedback is written in ChatML (Qwen's
template); subclass :class:`AgentInstance` and change ``feedback`` /
``tool_response`` for another chat template.
"""

from __future__ import annotations

import contextvars
import json
import os
import re
from typing import Any, Optional

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from kbserve.client import AsyncClient
from kbserve.errors import KbserveError

__all__ = ["AgentInstance", "AgentExecutor", "parse_tool_calls", "task_of_label"]

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_live: contextvars.ContextVar[Optional[list]] = contextvars.ContextVar("kbserve_openrlhf_instances", default=None)


def parse_tool_calls(text: str) -> tuple[list[dict], list[str]]:
    """The ``<tool_call>`` blocks of a reply: ([{"name", "arguments"}], [errors])."""
    calls, errors = [], []
    for body in _TOOL_CALL.findall(text):
        try:
            call = json.loads(body)
            name, args = call["name"], call.get("arguments", {})
            if isinstance(args, str):
                args = json.loads(args) if args.strip() else {}
            if not isinstance(name, str) or not isinstance(args, dict):
                raise ValueError("name must be a string and arguments an object")
            calls.append({"name": name, "arguments": args})
        except (ValueError, KeyError, TypeError) as e:
            errors.append(f"could not read a tool call ({e}): {body[:200]}")
    return calls, errors


def task_of_label(label: Any) -> str:
    if isinstance(label, dict):
        return label["task"]
    if isinstance(label, str):
        try:
            j = json.loads(label)
            if isinstance(j, dict) and isinstance(j.get("task"), str):
                return j["task"]
        except ValueError:
            pass
        return label
    raise KbserveError(f"a label must be a task id or {{'task': ID}}, not {label!r}")


class AgentInstance(AgentInstanceBase):
    """One prompt's episode: one kbserve session."""

    feedback = "\n<|im_start|>user\n{responses}<|im_end|>\n<|im_start|>assistant\n"
    tool_response = "<tool_response>\n{text}\n</tool_response>"

    def __init__(self, *args, **kwargs):
        self.base_url = os.environ.get("KBSERVE_URL")
        if not self.base_url:
            raise KbserveError("set KBSERVE_URL to the kbserve server for the OpenRLHF agent")
        self.token = os.environ.get("KBSERVE_TOKEN")
        self.device = os.environ.get("KBSERVE_DEVICE", "cpu")
        self.scheme = os.environ.get("KBSERVE_REWARD") or None
        self.client: Optional[AsyncClient] = None
        self.session_id: Optional[str] = None
        self.done = False
        self.reward: Optional[float] = None
        self.status: Optional[str] = None
        self.turns = 0
        live = _live.get()
        if live is not None:
            live.append(self)

    async def reset(self, states: dict, **kwargs) -> dict:
        self.client = AsyncClient(self.base_url, self.token)
        result = await self.client.reset(task_of_label(states["label"]), device=self.device, reward=self.scheme)
        self.session_id = result["session_id"]
        # The prompt stays the dataset's (OpenRLHF tokenized it with its chat template).
        return {"observation": states["observation"]}

    async def _call(self, name: str, arguments: dict) -> dict:
        result = await self.client.step(self.session_id, name, arguments)
        self.turns += 1
        if result.get("done"):
            self.done = True
            self.reward = result.get("reward")
            self.status = (result.get("info") or {}).get("status")
            await self.close()
            if self.reward is None:  # an infrastructure fault is never a reward
                raise KbserveError(f"kbserve ended the episode without a reward (status {self.status})")
        return result

    async def step(self, states: dict, **kwargs) -> dict:
        calls, errors = parse_tool_calls(states["action_text"])
        texts = list(errors)
        if not calls and not errors:
            await self._call("finish", {"summary": "(the reply called no tool)"})
        for call in calls:
            if self.done:
                texts.append("The episode is over; the remaining tool calls were not run.")
                break
            result = await self._call(call["name"], call["arguments"])
            texts.append(result["observation"].get("text", ""))
        reward = float(self.reward) if self.done else 0.0
        feedback = "" if self.done else self.feedback.format(
            responses="\n".join(self.tool_response.format(text=t) for t in texts))
        return {"rewards": torch.tensor(reward), "scores": torch.tensor(reward), "environment_feedback": feedback,
                "done": self.done, "sampling_params": states.get("sampling_params"),
                "extra_logs": {"kbserve_turns": float(self.turns),
                               "kbserve_ok": 1.0 if self.status == "ok" else 0.0}}

    async def finish_if_open(self) -> Optional[float]:
        """Finishes an episode that OpenRLHF stopped early; its reward."""
        if self.session_id is None or self.done:
            return None
        await self._call("finish", {"summary": "(the rollout reached its length budget)"})
        return float(self.reward)

    async def close(self) -> None:
        if self.session_id is not None and self.client is not None:
            sid, self.session_id = self.session_id, None
            try:
                await self.client.close_session(sid)
            finally:
                await self.client.aclose()


class AgentExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn executor over :class:`AgentInstance`; an
    episode cut at the length budget is finished and scored."""

    instance_cls = AgentInstance

    def __init__(self):
        super().__init__(self.instance_cls)

    async def execute(self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine, images=None):
        live: list = []
        token = _live.set(live)
        try:
            out = await super().execute(prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images)
            for inst in live:
                extra = await inst.finish_if_open()
                if extra is not None:
                    out["reward"] = out["reward"] + extra
                    out["scores"] = extra
                    out["extra_logs"] = {**out.get("extra_logs", {}), "kbserve_ok": 1.0 if inst.status == "ok" else 0.0}
            return out
        finally:
            _live.reset(token)
            for inst in live:
                await inst.close()
