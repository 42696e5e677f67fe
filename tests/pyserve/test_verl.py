"""kbserve.adapters.verl through veRL's own code: the tools loaded by
``verl.tools.tool_registry.load_all_tools`` from the YAML the adapter writes,
one episode of veRL's ``ToolAgentLoop`` (hermes tool-call parsing, veRL's
create/execute/release per call, its token bookkeeping) with a replay policy
in place of the LLM server, and the reward through
``verl.trainer.ppo.reward.load_reward_manager`` (custom_reward_function ->
the naive reward manager's ``run_single``)."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import SOURCE_ROOT, TASK_ID, require_engine

require_engine("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap  # noqa: E402
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop  # noqa: E402
from verl.tools.tool_registry import load_all_tools  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from kbserve import Client, parse_metrics  # noqa: E402
from kbserve.adapters.verl import tools_kwargs, write_tool_config  # noqa: E402

# The bundled tiny Qwen2 tokenizer (its chat template has tools and <tool_call>).
TOKENIZER = SOURCE_ROOT / "testdata" / "policy" / "qwen2-tiny"


def tool_call(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class ReplayServer:
    """veRL's LLM server client, replaced by fixed replies (no model)."""

    def __init__(self, tokenizer, replies):
        self.tokenizer, self.replies, self.prompts = tokenizer, list(replies), []

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        self.prompts.append(list(prompt_ids))
        text = self.replies.pop(0) + "<|im_end|>"
        return TokenOutput(token_ids=self.tokenizer.encode(text, add_special_tokens=False), stop_reason="completed")


def rollout_config():
    return OmegaConf.create({"actor_rollout_ref": {"rollout": {
        "prompt_length": 8192, "response_length": 16384, "full_determinism": False,
        "multi_turn": {"max_user_turns": 8, "max_assistant_turns": 8, "max_parallel_calls": 2,
                       "max_tool_response_length": 8192, "tool_response_truncate_side": "middle",
                       "format": "hermes"}}}})


def reward_config(url: str):
    return OmegaConf.create({"reward": {
        "custom_reward_function": {"path": "pkg://kbserve.adapters.verl", "name": "compute_score",
                                   "reward_kwargs": {"base_url": url}},
        "reward_manager": {"source": "register", "name": "naive"}}})


@pytest.fixture(scope="module")
def setup(server, tmp_path_factory):
    tok = AutoTokenizer.from_pretrained(str(TOKENIZER))
    path = tmp_path_factory.mktemp("verl") / "kbserve_tools.yaml"
    names = write_tool_config(path, server.url, TASK_ID, reward="correctness")
    assert {"write_file", "verify", "finish"} <= set(names)
    with Client(server.url) as c:
        reset = c.reset(TASK_ID)
        c.close_session(reset["session_id"])
    return tok, path, names, reset["observation"]["messages"]


async def run_episode(tok, tools_path, names, messages, replies):
    tools = load_all_tools(str(tools_path), None)
    replay = ReplayServer(tok, replies)
    loop = ToolAgentLoop(trainer_config=DictConfigWrap(rollout_config()), server_manager=replay, tokenizer=tok,
                         processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(OmegaConf.create({})),
                         hf_model_type="qwen2", tools=ToolListWrap(tools))
    out = await loop.run({}, raw_prompt=messages, tools_kwargs=tools_kwargs(TASK_ID, names))
    return out, replay


def data_for(tok, out, extra_info=None, with_tools=True) -> DataProto:
    # As veRL's AgentLoopWorker._compute_score hands one trajectory to the reward manager.
    prompts = torch.tensor(out.prompt_ids if out else [0], dtype=torch.int64)
    responses = torch.tensor(out.response_ids, dtype=torch.int64)
    input_ids = torch.cat([prompts, responses])
    batch = TensorDict({"prompts": prompts[None], "responses": responses[None], "input_ids": input_ids[None],
                        "attention_mask": torch.ones_like(input_ids)[None]}, batch_size=1)
    nt = {"data_source": np.array(["kbserve"], dtype=object),
          "reward_model": np.array([{"ground_truth": TASK_ID}], dtype=object),
          "extra_info": np.array([dict(extra_info or {})], dtype=object),
          "__num_turns__": np.array([out.num_turns])}
    if with_tools:
        nt["tool_extra_fields"] = np.array([out.extra_fields], dtype=object)
    return DataProto(batch=batch, non_tensor_batch=nt)


def test_multi_turn_episode_and_reward(server, setup, ok_files):
    tok, path, names, messages = setup
    source = ok_files["forward.cpp"]
    assert tok.decode(tok.encode(source, add_special_tokens=False)) == source  # the replay survives tokenization
    # The first turn makes two calls at once (veRL runs them concurrently): one session.
    replies = [tool_call("read_file", {"path": "model.py"}) + "\n" +
               tool_call("write_file", {"path": "solution/forward.cpp", "content": source}),
               tool_call("verify", {}),
               tool_call("finish", {"summary": "relu(x W^T + b) on the host"}),
               "Finished."]

    async def run():
        out, replay = await run_episode(tok, path, names, messages, replies)
        manager = load_reward_manager(reward_config(server.url), tok)
        scored = await manager.run_single(data_for(tok, out))
        return out, replay, scored

    out, replay, scored = asyncio.run(run())
    state = out.extra_fields["kbserve"]
    assert state["done"] and state["reward"] == 1.0 and state["status"] == "ok", state
    assert out.extra_fields["tool_rewards"] == [0.0, 0.0, 0.0, 1.0]
    assert state["turns"] == 4
    assert len(replay.prompts) == 4 and replay.replies == []
    text = tok.decode(out.response_ids)
    assert text.count("<tool_response>") == 4 and "class Model" in text  # read_file's answer
    assert scored["reward_score"] == 1.0 and scored["reward_extra_info"]["status"] == "ok"
    with Client(server.url) as c:
        assert parse_metrics(c.metrics())[("kbserve_sessions_active", ())] == 0


def test_episode_without_finish_is_finished_by_the_reward(server, setup, wrong_files):
    tok, path, names, messages = setup
    replies = [tool_call("write_file", {"path": "solution/forward.cpp", "content": wrong_files["forward.cpp"]}),
               "I think that is it."]  # no finish: the session is still open after the rollout

    async def run():
        out, _ = await run_episode(tok, path, names, messages, replies)
        assert out.extra_fields["kbserve"]["done"] is False
        manager = load_reward_manager(reward_config(server.url), tok)
        return out, await manager.run_single(data_for(tok, out))

    out, scored = asyncio.run(run())
    assert scored["reward_score"] == -1.0 and scored["reward_extra_info"]["status"] == "incorrect", scored
    with Client(server.url) as c:
        assert parse_metrics(c.metrics())[("kbserve_sessions_active", ())] == 0


def test_single_turn_reward(server, setup, ok_files, wrong_files):
    tok = setup[0]

    async def score(reply: str):
        manager = load_reward_manager(reward_config(server.url), tok)

        class Out:  # a single-turn sample: prompt and response tokens only
            prompt_ids = tok.encode("Write forward.cpp.", add_special_tokens=False)
            response_ids = tok.encode(reply + "<|im_end|>", add_special_tokens=False)
            num_turns = 2
            extra_fields = {}

        return await manager.run_single(data_for(tok, Out, with_tools=False))

    good = "```cpp\n// file: forward.cpp\n" + ok_files["forward.cpp"] + "```"
    bad = "```cpp\n// file: forward.cpp\n" + wrong_files["forward.cpp"] + "```"
    assert asyncio.run(score(good))["reward_score"] == 1.0
    out = asyncio.run(score(bad))
    assert out["reward_score"] == -1.0 and out["reward_extra_info"]["correct"] == 0.0
