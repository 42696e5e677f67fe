"""kbserve.adapters.openrlhf through OpenRLHF's own code: the agent file
loaded by OpenRLHF's ``_load_agent_executor`` (its source, taken from
openrlhf/trainer/ray/vllm_engine.py, which itself imports vLLM), one episode
of OpenRLHF's ``MultiTurnAgentExecutor.execute`` with a replay policy in
place of the vLLM engine and the bundled Qwen2 tokenizer, and the
single-turn remote reward through OpenRLHF's ``SingleTurnAgentExecutor``
posting to the server's /v1/reward/openrlhf."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import SOURCE_ROOT, TASK_ID, require_engine

require_engine("openrlhf")

import openrlhf  # noqa: E402
from openrlhf.utils.agent import AgentExecutorBase, SingleTurnAgentExecutor  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

import kbserve.adapters.openrlhf as adapter  # noqa: E402
from kbserve import Client, parse_metrics  # noqa: E402

TOKENIZER = SOURCE_ROOT / "testdata" / "policy" / "qwen2-tiny"


def openrlhf_loader():
    """OpenRLHF's own ``_load_agent_executor``, compiled from its source file."""
    src = Path(openrlhf.__file__).parent / "trainer" / "ray" / "vllm_engine.py"
    tree = ast.parse(src.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_load_agent_executor")
    namespace = {"AgentExecutorBase": AgentExecutorBase, "importlib": importlib}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(src), "exec"), namespace)
    return namespace["_load_agent_executor"]


class ReplayEngine:
    """vLLM's engine as OpenRLHF calls it, with fixed replies (no model)."""

    def __init__(self, tokenizer, replies):
        self.tokenizer, self.replies, self.calls = tokenizer, list(replies), 0

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.calls += 1
        text = self.replies.pop(0)
        ids = self.tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text=text, finish_reason="stop",
                                                        logprobs=None)])


def tool_call(name, arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.fixture(scope="module")
def env(server):
    tok = AutoTokenizer.from_pretrained(str(TOKENIZER))
    with Client(server.url) as c:
        reset = c.reset(TASK_ID)
        c.close_session(reset["session_id"])
    prompt = tok.apply_chat_template(reset["observation"]["messages"], tools=reset["observation"]["tools"],
                                     add_generation_prompt=True, tokenize=False)
    mp = pytest.MonkeyPatch()
    mp.setenv("KBSERVE_URL", server.url)
    mp.setenv("KBSERVE_REWARD", "correctness")
    yield tok, prompt
    mp.undo()


def sessions_active(url):
    with Client(url) as c:
        return parse_metrics(c.metrics())[("kbserve_sessions_active", ())]


def test_multi_turn_episode(server, env, ok_files):
    tok, prompt = env
    executor = openrlhf_loader()(adapter.__file__)
    assert isinstance(executor, AgentExecutorBase)
    engine = ReplayEngine(tok, [tool_call("write_file", {"path": "solution/forward.cpp",
                                                         "content": ok_files["forward.cpp"]}),
                                tool_call("verify", {}),
                                tool_call("finish", {"summary": "host loop"})])
    params = SimpleNamespace(max_tokens=None, logprobs=None)
    out = asyncio.run(executor.execute(prompt, TASK_ID, params, 32768, tok, engine))
    assert out["reward"] == 1.0 and float(out["scores"]) == 1.0, out["extra_logs"]
    assert engine.calls == 3 and len(out["action_ranges"]) == 3
    assert out["extra_logs"]["kbserve_ok"] == 1.0
    text = tok.decode(out["observation_tokens"])
    assert text.startswith(prompt) and text.count("<tool_response>") == 2  # finish ends it: no feedback
    assert sessions_active(server.url) == 0


def test_reply_without_tool_call_finishes(server, env, wrong_files):
    tok, prompt = env
    executor = openrlhf_loader()(adapter.__file__)
    engine = ReplayEngine(tok, [tool_call("write_file", {"path": "solution/forward.cpp",
                                                         "content": wrong_files["forward.cpp"]}),
                                "That should do it."])
    out = asyncio.run(executor.execute(prompt, json.dumps({"task": TASK_ID}),
                                       SimpleNamespace(max_tokens=None, logprobs=None), 32768, tok, engine))
    assert out["reward"] == -1.0 and engine.calls == 2
    assert sessions_active(server.url) == 0


def test_length_budget_cut_is_finished(server, env, ok_files):
    tok, prompt = env
    reply = tool_call("write_file", {"path": "solution/forward.cpp", "content": ok_files["forward.cpp"]})
    budget = len(tok.encode(prompt, add_special_tokens=False)) + len(tok.encode(reply + "<|im_end|>",
                                                                               add_special_tokens=False)) + 5
    executor = openrlhf_loader()(adapter.__file__)
    engine = ReplayEngine(tok, [reply, tool_call("verify", {})])
    out = asyncio.run(executor.execute(prompt, TASK_ID, SimpleNamespace(max_tokens=None, logprobs=None), budget,
                                       tok, engine))
    # OpenRLHF stopped after one action (no budget left); the adapter finished the episode.
    assert engine.calls == 1 and out["reward"] == 1.0 and out["scores"] == 1.0
    assert sessions_active(server.url) == 0


def test_remote_reward_url_is_the_server(server, env, ok_files, wrong_files):
    tok, prompt = env
    executor = SingleTurnAgentExecutor(remote_rm_url=f"{server.url}/v1/reward/openrlhf")
    rewards = []
    for files in (ok_files, wrong_files):
        reply = "```cpp\n// file: forward.cpp\n" + files["forward.cpp"] + "```"
        engine = ReplayEngine(tok, [reply])
        out = asyncio.run(executor.execute(prompt, TASK_ID, SimpleNamespace(max_tokens=None, logprobs=None),
                                           32768, tok, engine))
        # One query per call: lists of one, as OpenRLHF's own reward server
        # (openrlhf/cli/serve_rm.py) answers them.
        rewards.append(out["reward"])
        assert out["extra_logs"]["correct"] == [1.0 if files is ok_files else 0.0]
        assert out["scores"] == out["reward"]
    assert rewards == [[1.0], [-1.0]]


def test_parse_tool_calls():
    calls, errors = adapter.parse_tool_calls(
        'a<tool_call>{"name": "verify", "arguments": {}}</tool_call>b'
        '<tool_call>{"name": "write_file", "arguments": "{\\"path\\": \\"x\\"}"}</tool_call>'
        '<tool_call>{oops}</tool_call>')
    assert calls == [{"name": "verify", "arguments": {}}, {"name": "write_file", "arguments": {"path": "x"}}]
    assert len(errors) == 1 and "oops" in errors[0]
