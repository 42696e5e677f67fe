#!/usr/bin/env python3
"""Builds the policy test fixtures under testdata/policy/ with the reference
implementations (Hugging Face `tokenizers` and `transformers`). Run once on a
machine that has them; the C++ tests compare against the committed files and
need no Python.

    python3 scripts/make_policy_fixtures.py [--out testdata/policy]

What it writes (docs/policy-model.md describes each file):
  tokenizers/{qwen,llama3,gpt2}.json   three small byte-level BPE tokenizers
                                       trained with `tokenizers`
  tokenizer_expected.json              their ids and decodes of corpus/*
  qwen2-tiny/                          random Qwen2 (tied embeddings, q/k/v
                                       bias, fp32, sharded with an index) +
                                       the qwen tokenizer and a ChatML
                                       chat template
  llama-tiny/                          random Llama (llama3 rope scaling,
                                       attention and MLP bias, untied, bf16)
  */expected.safetensors               a padded batch: input_ids,
                                       attention_mask, logits (fp32)
  */greedy.json                        64 greedy tokens per prompt
                                       (transformers generate) and their
                                       log-probabilities
  chat_expected.json                   conversations rendered by the Jinja
                                       template through transformers, and
                                       their token ids
The functions here are reused by scripts/policy_reference.py on the GPU machine.
"""
import argparse
import json
import os
import shutil

import torch

QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# ChatML with Qwen2.5-style tools, as a Jinja template for transformers'
# apply_chat_template: the reference our C++ ChatTemplate is checked against.
CHATML_TOOLS_TEMPLATE = r"""{%- set default_system = 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' -%}
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- else %}{{- default_system }}{%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\n' + default_system + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant\n' }}
        {%- if message.content %}{{- message.content }}{%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if (loop.first and message.content) or (not loop.first) %}{{- '\n' }}{%- endif %}
            {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
            {{- '<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' }}
            {%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
        {{- '\n<tool_response>\n' + message.content + '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

TRAINING_TEXT = [
    "def forward(self, x: torch.Tensor) -> torch.Tensor:\n    return torch.relu(self.linear(x)) + x\n",
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nclass Model(nn.Module):\n"
    "    def __init__(self, in_features, out_features):\n        super().__init__()\n"
    "        self.linear = nn.Linear(in_features, out_features)\n",
    "__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* c, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) c[i] = a[i] + b[i];\n}\n",
    "extern \"C\" void launch(const float* a, float* out, int n, cudaStream_t stream) {\n"
    "  add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a, a, out, n);\n}\n",
    "for (int k = 0; k < K; ++k) { acc += A[row * K + k] * B[k * N + col]; }\n__syncthreads();\n",
    "The kernel is correct and faster than the reference. We measure it with CUDA events.\n",
    "Der Kernel ist schneller. Le noyau est plus rapide. El núcleo es más rápido.\n",
    "Ядро быстрее эталона. 内核比参考实现更快。カーネルは速いです。커널이 더 빠릅니다.\n",
    "Use the tools: compile, verify, profile. <tool_call> returns JSON with \"name\" and \"arguments\".\n",
    "numbers 0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14 2.71 1e-5 0.5f 256 1024 4096\n",
]


def training_corpus(corpus_dir):
    texts = list(TRAINING_TEXT) * 20
    for name in sorted(os.listdir(corpus_dir)):
        with open(os.path.join(corpus_dir, name), encoding="utf-8", newline="") as f:
            texts.append(f.read())
    return texts


def train_tokenizer(kind, texts, vocab_size):
    """A byte-level BPE in the layout of Qwen2 ('qwen'), Llama 3 ('llama3') or GPT-2 ('gpt2')."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers import processors, trainers

    if kind == "qwen":
        tok = Tokenizer(models.BPE())
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    elif kind == "llama3":
        tok = Tokenizer(models.BPE(ignore_merges=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        special = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    elif kind == "gpt2":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)])
        special = ["<|endoftext|>"]
    else:
        raise ValueError(kind)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    if kind == "qwen":
        tok.add_tokens([AddedToken("<tool_call>", special=False, normalized=False),
                        AddedToken("</tool_call>", special=False, normalized=False)])
    if kind == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                          pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                          special_tokens=[("<|begin_of_text|>", bos)])])
    if kind == "gpt2":
        tok.add_special_tokens([AddedToken("<pad>", special=True, lstrip=True, rstrip=True)])
    return tok


def hf_tokenizer(tok, kind):
    from transformers import PreTrainedTokenizerFast
    if kind == "qwen":
        return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                       chat_template=CHATML_TOOLS_TEMPLATE)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")


def randomize(model, seed):
    """Weights large enough that logits spread over several units (the
    default init gives near-uniform logits, which would make parity trivial)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / (p.shape[-1] ** 0.5) * 1.5)


def make_qwen2(vocab_size, hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, seed=1, **extra):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    cfg = Qwen2Config(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=intermediate,
                      num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                      max_position_embeddings=512, rope_theta=1000000.0, rms_norm_eps=1e-6,
                      tie_word_embeddings=True, **extra)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg).eval()
    randomize(model, seed)
    return model


def make_llama(vocab_size, seed=2):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=256,
                      rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                      attention_bias=True, mlp_bias=True,
                      rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 16.0, "original_max_position_embeddings": 64})
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    randomize(model, seed)
    return model


def padded_batch(rows, pad_sides):
    """rows: lists of ids; pad_sides: 'left' or 'right' per row."""
    T = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    mask = torch.zeros(len(rows), T, dtype=torch.long)
    for b, (r, side) in enumerate(zip(rows, pad_sides)):
        s = T - len(r) if side == "left" else 0
        ids[b, s:s + len(r)] = torch.tensor(r)
        mask[b, s:s + len(r)] = 1
    return ids, mask


def reference_logits(model, ids, mask):
    """transformers' logits for a padded batch; positions count real tokens."""
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        out = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                    position_ids=position_ids.to(model.device))
    return out.logits.float().cpu()


def reference_greedy(model, prompt, steps):
    """transformers' greedy generate (one prompt, no eos stop): ids and the
    log-probability of each chosen token."""
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    ids = torch.tensor([prompt], device=model.device)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=steps, min_new_tokens=0,
                             do_sample=False, output_scores=True, return_dict_in_generate=True,
                             eos_token_id=None, pad_token_id=0)
    new = out.sequences[0, len(prompt):].tolist()
    logprobs = [torch.log_softmax(s[0].float(), -1)[t].item() for s, t in zip(out.scores, new)]
    return new, logprobs


CONVERSATIONS = [
    {"messages": [{"role": "user", "content": "Write a CUDA kernel that adds two vectors."},
                  {"role": "assistant", "content": "Here it is:\n```cuda\n__global__ void add(float* a) {}\n```"}]},
    {"messages": [{"role": "system", "content": "You are a CUDA expert."},
                  {"role": "user", "content": "Is this fast?"},
                  {"role": "assistant", "content": "Yes."},
                  {"role": "user", "content": "Prove it — with numbers: 1.5× faster?"},
                  {"role": "assistant", "content": "Measured 2.1× over eager; 内核更快。"}]},
    {"tools": [{"type": "function", "function": {
                  "name": "compile", "description": "Compile the solution with nvcc.",
                  "parameters": {"type": "object", "properties": {
                      "flags": {"type": "string", "description": "extra nvcc flags"},
                      "verbose": {"type": "boolean"}}, "required": []}}},
               {"type": "function", "function": {
                  "name": "profile", "description": "Time the solution (ms).",
                  "parameters": {"type": "object", "properties": {"runs": {"type": "integer"}}}}}],
     "messages": [{"role": "user", "content": "Optimise model.py."},
                  {"role": "assistant", "content": "",
                   "tool_calls": [{"type": "function", "function": {
                       "name": "compile", "arguments": {"flags": "-O3 --use_fast_math", "verbose": False}}}]},
                  {"role": "tool", "content": "ok: built solution.so in 1.2 s"},
                  {"role": "assistant", "content": "It compiles. Timing it now.",
                   "tool_calls": [{"type": "function", "function": {"name": "profile", "arguments": {"runs": 20}}},
                                  {"type": "function", "function": {"name": "compile", "arguments": {}}}]},
                  {"role": "tool", "content": "median 0.412 ms"},
                  {"role": "tool", "content": "ok"},
                  {"role": "assistant", "content": "Done: 0.412 ms."}]},
    {"tools": [{"type": "function", "function": {"name": "shell", "parameters": {
        "type": "object", "properties": {"cmd": {"type": "string"}}}}}],
     "messages": [{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "List the files."}]},
]


def write_model_fixture(model, tokenizer, hf_tok, out_dir, batch_rows, pad_sides, greedy_prompts, shard=None,
                        dtype=None):
    from safetensors.torch import save_file
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    save_model = model if dtype is None else model.to(dtype)
    save_model.save_pretrained(out_dir, max_shard_size=shard) if shard else save_model.save_pretrained(out_dir)
    hf_tok.save_pretrained(out_dir)
    # The reference outputs come from the checkpoint as written, read in fp32.
    import transformers
    from transformers import AutoModelForCausalLM
    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    ref = AutoModelForCausalLM.from_pretrained(out_dir, **{key: torch.float32}).eval()
    ids, mask = padded_batch(batch_rows, pad_sides)
    logits = reference_logits(ref, ids, mask)
    save_file({"input_ids": ids, "attention_mask": mask, "logits": logits.contiguous()},
              os.path.join(out_dir, "expected.safetensors"))
    greedy = []
    for p in greedy_prompts:
        new, lps = reference_greedy(ref, p, 64)
        greedy.append({"prompt": p, "tokens": new, "logprobs": lps})
    with open(os.path.join(out_dir, "greedy.json"), "w") as f:
        json.dump({"steps": 64, "cases": greedy}, f)
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(root, "testdata", "policy"))
    args = ap.parse_args()
    out = args.out
    corpus_dir = os.path.join(out, "corpus")
    texts = training_corpus(corpus_dir)

    os.makedirs(os.path.join(out, "tokenizers"), exist_ok=True)
    toks = {}
    for kind, size in [("qwen", 800), ("llama3", 600), ("gpt2", 400)]:
        toks[kind] = train_tokenizer(kind, texts, size)
        toks[kind].save(os.path.join(out, "tokenizers", kind + ".json"))

    # Tokenizer parity: whole files and every line, for each tokenizer.
    cases = []
    for name in sorted(os.listdir(corpus_dir)):
        with open(os.path.join(corpus_dir, name), encoding="utf-8", newline="") as f:
            text = f.read()
        cases.append({"name": name, "text": text})
        for i, line in enumerate(text.splitlines(keepends=True)):
            cases.append({"name": f"{name}:{i + 1}", "text": line})
    expected = {"cases": [c["name"] for c in cases], "texts": [c["text"] for c in cases], "tokenizers": {}}
    for kind, tok in toks.items():
        ids = [tok.encode(c["text"]).ids for c in cases]
        decoded = [tok.decode(i, skip_special_tokens=False) for i in ids]
        expected["tokenizers"][kind] = {"ids": ids, "decoded": decoded}
    with open(os.path.join(out, "tokenizer_expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False)

    # Chat template parity.
    hf_qwen = hf_tokenizer(toks["qwen"], "qwen")
    chats = []
    for conv in CONVERSATIONS:
        for gen in (False, True):
            text = hf_qwen.apply_chat_template(conv["messages"], tools=conv.get("tools"), tokenize=False,
                                               add_generation_prompt=gen)
            chats.append({"messages": conv["messages"], "tools": conv.get("tools"), "add_generation_prompt": gen,
                          "text": text, "ids": toks["qwen"].encode(text, add_special_tokens=False).ids})
    with open(os.path.join(out, "chat_expected.json"), "w", encoding="utf-8") as f:
        json.dump(chats, f, ensure_ascii=False, indent=1)

    # Models.
    q = toks["qwen"]
    enc = lambda s: q.encode(s).ids  # noqa: E731
    qwen = make_qwen2(q.get_vocab_size())
    rows = [enc("__global__ void add(float* a, float* b) { a[i] += b[i]; }"),
            enc("Das Ergebnis ist 2,3× schneller."), enc("def f(x):")]
    write_model_fixture(qwen, q, hf_qwen, os.path.join(out, "qwen2-tiny"), rows, ["left", "left", "right"],
                        [rows[1], rows[2], enc("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n")],
                        shard="150KB")
    lt = toks["llama3"]
    llama = make_llama(lt.get_vocab_size())
    lrows = [lt.encode("int main() { return 0; }").ids, lt.encode("Bonjour, le noyau.").ids]
    write_model_fixture(llama, lt, hf_tokenizer(lt, "llama3"), os.path.join(out, "llama-tiny"), lrows,
                        ["left", "right"], [lrows[0]], dtype=torch.bfloat16)
    total = 0
    for dirpath, _, files in os.walk(out):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    print(f"wrote {out} ({total / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
