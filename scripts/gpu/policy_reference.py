#!/usr/bin/env python3
"""The GPU acceptance of the local policy (issue 9) against transformers and
tokenizers, and the decode-throughput comparison. Needs torch, transformers,
tokenizers and safetensors (the GPU machine has them); nothing is downloaded:
the checkpoints and the tokenizer are made here.

  policy_reference.py validate --kbpolicy build-gpu/tools/kbpolicy/kbpolicy --work /tmp/v [--device cuda]
      1. trains a byte-level BPE tokenizer (Qwen2 layout) with `tokenizers`;
         our ids must equal its ids on CUDA/Python/multilingual text;
      2. saves a random-weight Qwen2 with save_pretrained (fp32);
      3. our fp32 logits on a padded batch must match transformers' within 1e-4;
      4. greedy generation: identical tokens for 64 steps;
      5. a checkpoint we save (one file and sharded) loads in transformers and
         gives the same logits.
      Prints one line per check and a JSON summary; exit 1 if any check fails.

  policy_reference.py bench --kbpolicy ... --preset qwen2.5-0.5b --batch 16
      prefill and decode tokens/s of `kbpolicy bench` and of transformers'
      generate on the same config (random weights), in one run.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import make_policy_fixtures as fx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRESETS = {
    # Shapes of the public configs (random weights here).
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True,
                         max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6),
    "qwen2.5-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True,
                         max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6),
    "qwen2.5-7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False,
                       max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6),
    "small": dict(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
                  num_key_value_heads=2, vocab_size=1024, tie_word_embeddings=True,
                  max_position_embeddings=4096, rope_theta=1000000.0, rms_norm_eps=1e-6),
}


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-4000:], r.stderr[-4000:], sep="\n")
        raise SystemExit(f"command failed ({r.returncode}): {' '.join(cmd)}")
    return r.stdout


def load_hf(path, dtype):
    """from_pretrained in a given dtype (transformers 5 says dtype=, 4 torch_dtype=)."""
    import transformers
    from transformers import AutoModelForCausalLM
    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    return AutoModelForCausalLM.from_pretrained(path, **{key: dtype}).eval()


def sync(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def validate(args):
    from safetensors.torch import load_file, save_file

    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    kb = os.path.abspath(args.kbpolicy)
    dev = args.device
    results = []

    def check(name, ok, detail):
        results.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}", flush=True)

    # 1. Tokenizer parity.
    corpus_dir = os.path.join(ROOT, "testdata", "policy", "corpus")
    tok = fx.train_tokenizer("qwen", fx.training_corpus(corpus_dir), 1000)
    model_dir = os.path.join(work, "qwen2")
    texts = []
    for name in sorted(os.listdir(corpus_dir)):
        with open(os.path.join(corpus_dir, name), encoding="utf-8", newline="") as f:
            t = f.read()
        texts.append(t)
        texts.extend(t.splitlines(keepends=True))
    texts.append("".join(texts[:3]) * 20)  # one long text
    texts_file = os.path.join(work, "texts.json")
    with open(texts_file, "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)
    hf_tok = fx.hf_tokenizer(tok, "qwen")

    # 2. A random Qwen2, fp32, saved by transformers.
    model = fx.make_qwen2(tok.get_vocab_size(), hidden=256, layers=4, heads=8, kv_heads=2, intermediate=512, seed=5)
    model.save_pretrained(model_dir)
    hf_tok.save_pretrained(model_dir)
    tok.save(os.path.join(work, "tokenizer.json"))
    ours_file = os.path.join(work, "ids_ours.json")
    run([kb, "encode", "--tokenizer", model_dir, "--texts", texts_file, "--out", ours_file])
    with open(ours_file) as f:
        ours = json.load(f)
    theirs = [tok.encode(t).ids for t in texts]
    bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    check("tokenizer ids == tokenizers", not bad and len(ours) == len(theirs),
          f"{len(texts)} texts, {sum(map(len, theirs))} tokens, {len(bad)} mismatching texts")
    dec_bad = [i for i, t in enumerate(texts) if tok.decode(theirs[i]) != tok.decode(ours[i])]
    check("decode round trip", not dec_bad, f"{len(dec_bad)} mismatching decodes")

    # 3. Logits on a padded batch (left and right padding), fp32.
    ref = load_hf(model_dir, torch.float32).to(dev)
    enc = lambda s: tok.encode(s).ids  # noqa: E731
    rows = [enc(texts[0][:200]), enc("Das Ergebnis ist 2,3× schneller."), enc("def f(x):\n    return x"),
            enc("内核把矩阵乘法、偏置和激活融合在一起")]
    ids, mask = fx.padded_batch(rows, ["left", "left", "right", "left"])
    inputs = os.path.join(work, "inputs.safetensors")
    save_file({"input_ids": ids, "attention_mask": mask}, inputs)
    want = fx.reference_logits(ref, ids, mask)
    real = mask.bool().unsqueeze(-1)

    def our_logits(mdir, dtype):
        out = os.path.join(work, f"logits_{dtype}.safetensors")
        run([kb, "logits", "--model", mdir, "--inputs", inputs, "--out", out, "--device", dev, "--dtype", dtype])
        return load_file(out)["logits"]

    diff = ((our_logits(model_dir, "float32") - want).abs() * real).max().item()
    check("fp32 logits vs transformers (padded batch)", diff < 1e-4,
          f"max |diff| {diff:.3g} over {int(mask.sum())} real positions, |logits| up to {want.abs().max():.2f}")
    ref_bf16 = load_hf(model_dir, torch.bfloat16).to(dev)
    want_bf16 = fx.reference_logits(ref_bf16, ids, mask)
    diff_bf16 = ((our_logits(model_dir, "bfloat16") - want_bf16).abs() * real).max().item()
    diff_bf16_fp32 = ((want_bf16 - want).abs() * real).max().item()
    check("bf16 logits vs transformers bf16 (information)", True,
          f"max |diff| {diff_bf16:.3g} (transformers bf16 vs its own fp32: {diff_bf16_fp32:.3g})")
    del ref_bf16

    # 3b. Rope scaling variants and the Llama family (tiny models, fp32).
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    small = dict(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    variants = [
        ("qwen2 yarn", Qwen2ForCausalLM, Qwen2Config, dict(rope_theta=1e6, rope_scaling={
            "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024})),
        ("qwen2 linear", Qwen2ForCausalLM, Qwen2Config, dict(rope_theta=1e4, rope_scaling={
            "rope_type": "linear", "factor": 2.0})),
        ("llama3 rope + bias, untied", LlamaForCausalLM, LlamaConfig, dict(
            rope_theta=5e5, attention_bias=True, mlp_bias=True, tie_word_embeddings=False, rope_scaling={
                "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64})),
    ]
    for label, cls, cfg_cls, extra in variants:
        torch.manual_seed(11)
        m = cls(cfg_cls(**small, **extra)).eval()
        fx.randomize(m, 11)
        vdir = os.path.join(work, label.split()[0] + "_" + label.split()[1])
        m.save_pretrained(vdir)
        r = load_hf(vdir, torch.float32).to(dev)
        d = ((our_logits(vdir, "float32") - fx.reference_logits(r, ids, mask)).abs() * real).max().item()
        check(f"fp32 logits vs transformers ({label})", d < 1e-4, f"max |diff| {d:.3g}")
        del r

    # 4. Greedy generation, 64 steps, all prompts in one padded batch on our side.
    prompts = rows[1:] + [enc("<|im_start|>user\nWrite a kernel.<|im_end|>\n<|im_start|>assistant\n")]
    prompts_file = os.path.join(work, "prompts.json")
    with open(prompts_file, "w") as f:
        json.dump(prompts, f)
    gen_out = run([kb, "generate", "--model", model_dir, "--prompts", prompts_file, "--temperature", "0",
                   "--max-new-tokens", "64", "--stop", str(10**9), "--device", dev, "--dtype", "float32"])
    ours_gen = [json.loads(line) for line in gen_out.splitlines() if line.strip()]
    same, first_diff, lp_diff = 0, [], 0.0
    for p, o in zip(prompts, ours_gen):
        new, lps = fx.reference_greedy(ref, p, 64)
        if o["token_ids"] == new:
            same += 1
        else:
            k = next((i for i, (a, b) in enumerate(zip(o["token_ids"], new)) if a != b), min(len(new), len(o["token_ids"])))
            first_diff.append(k)
        lp_diff = max(lp_diff, max(abs(a - b) for a, b in zip(o["logprobs"], lps)))
    check("greedy 64 steps identical to transformers generate", same == len(prompts),
          f"{same}/{len(prompts)} prompts identical; first differing step {first_diff or '-'}; "
          f"max |logprob diff| {lp_diff:.3g}")

    # 5. Checkpoints we write load in transformers with the same logits.
    for label, extra in [("one file", []), ("sharded", ["--max-shard-mb", "1"])]:
        saved = os.path.join(work, "saved_" + label.replace(" ", "_"))
        run([kb, "save", "--model", model_dir, "--out", saved, "--dtype", "float32"] + extra)
        files = sorted(os.listdir(saved))
        back = load_hf(saved, torch.float32).to(dev)
        d = (fx.reference_logits(back, ids, mask) - want).abs().max().item()
        check(f"our saved checkpoint ({label}) loads in transformers", d < 1e-5,
              f"max |logit diff| {d:.3g}; files: {', '.join(files)}")
        del back

    summary = {"device": torch.cuda.get_device_name(0) if dev.startswith("cuda") else "cpu",
               "torch": torch.__version__, "transformers": __import__("transformers").__version__,
               "tokenizers": __import__("tokenizers").__version__, "checks": results}
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def bench(args):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    cfg = Qwen2Config(**PRESETS[args.preset])
    cfg.architectures = ["Qwen2ForCausalLM"]
    config_file = os.path.join(work, f"{args.preset}.config.json")
    cfg.to_json_file(config_file)
    B, P, N = args.batch, args.prompt_len, args.new_tokens

    ours = json.loads(run([os.path.abspath(args.kbpolicy), "bench", "--config", config_file, "--batch", str(B),
                           "--prompt-len", str(P), "--new-tokens", str(N), "--device", args.device,
                           "--dtype", args.dtype, "--repeat", str(args.repeat)]))

    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[args.dtype]
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(device=args.device, dtype=dtype).eval()
    prompt = torch.randint(0, cfg.vocab_size, (B, P), device=args.device)
    mask = torch.ones_like(prompt)
    prefill, total = [], []
    with torch.inference_mode():
        for r in range(args.repeat + 1):
            sync(args.device)
            t0 = time.perf_counter()
            model(input_ids=prompt, attention_mask=mask, use_cache=True)
            sync(args.device)
            t1 = time.perf_counter()
            model.generate(prompt, attention_mask=mask, max_new_tokens=N, min_new_tokens=N, do_sample=False,
                           eos_token_id=None, pad_token_id=0)
            sync(args.device)
            t2 = time.perf_counter()
            if r:
                prefill.append(t1 - t0)
                total.append(t2 - t1)
    tp = sorted(prefill)[len(prefill) // 2]
    tg = sorted(total)[len(total) // 2]
    hf = {"impl": "transformers.generate", "prefill_s": tp, "prefill_tokens_per_s": B * P / tp,
          "decode_s": tg - tp, "decode_tokens_per_s": B * (N - 1) / (tg - tp),
          "attn_implementation": model.config._attn_implementation}
    print(f"\nconfig {args.preset} ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M params), {args.dtype}, "
          f"{args.device} {torch.cuda.get_device_name(0) if args.device.startswith('cuda') else ''}")
    print(f"batch {B}, prompt {P} tokens, {N} new tokens (greedy, KV cache), median of {args.repeat}")
    print(f"{'':24s} {'prefill tok/s':>14s} {'decode tok/s':>14s} {'decode s':>10s}")
    for name, r in [("kbpolicy (LibTorch)", ours), ("transformers generate", hf)]:
        print(f"{name:24s} {r['prefill_tokens_per_s']:14.0f} {r['decode_tokens_per_s']:14.0f} {r['decode_s']:10.3f}")
    print(json.dumps({"preset": args.preset, "batch": B, "prompt_len": P, "new_tokens": N, "dtype": args.dtype,
                      "kbpolicy": ours, "transformers": hf}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate")
    v.add_argument("--kbpolicy", required=True)
    v.add_argument("--work", default="/tmp/kb-policy-validate")
    v.add_argument("--device", default="cuda")
    b = sub.add_parser("bench")
    b.add_argument("--kbpolicy", required=True)
    b.add_argument("--work", default="/tmp/kb-policy-bench")
    b.add_argument("--preset", default="qwen2.5-0.5b", choices=sorted(PRESETS))
    b.add_argument("--batch", type=int, default=16)
    b.add_argument("--prompt-len", type=int, default=128)
    b.add_argument("--new-tokens", type=int, default=128)
    b.add_argument("--dtype", default="bfloat16")
    b.add_argument("--device", default="cuda")
    b.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.exit(validate(args) if args.cmd == "validate" else bench(args))


if __name__ == "__main__":
    main()
