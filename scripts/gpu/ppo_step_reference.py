#!/usr/bin/env python3
"""Plain PyTorch reference of kbtrain's PPO update step, for the throughput
comparison of scripts/gpu/validate-train.sh (step `throughput`).

The same computation as lib/rl/policy_gradient.cpp's update loop, on the same
model shape (a Qwen2 decoder written out here, no transformers needed):
for each micro-batch, actor forward -> float32 log-softmax at the targets ->
ratio, clipped surrogate (eps 0.2 / 0.28) -> backward; critic forward (same
architecture + scalar head) -> clipped value loss -> backward; then global
grad-norm clipping and AdamW on float32 master weights for both models.
Losses are token sums divided by the step's action-token count, as kbtrain.

Prints one JSON line: tokens/s (real tokens of the actor per step time),
median step seconds, the shapes.

  python3 scripts/gpu/ppo_step_reference.py --config CFG.json --batch 16 --seq 1024 \
      --micro-batch 4 --steps 5 --warmup 2 --dtype bfloat16
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


class Qwen2(torch.nn.Module):
    def __init__(self, c, dtype, device):
        super().__init__()
        self.c = c
        C, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
        H, KV = c["num_attention_heads"], c["num_key_value_heads"]
        D = c.get("head_dim") or C // H
        self.H, self.KV, self.D, self.eps = H, KV, D, c.get("rms_norm_eps", 1e-6)
        opt = dict(dtype=dtype, device=device)

        def w(*shape):
            return torch.nn.Parameter(torch.randn(*shape, **opt) * 0.02)

        def ones(n):
            return torch.nn.Parameter(torch.ones(n, **opt))

        def zeros(n):
            return torch.nn.Parameter(torch.zeros(n, **opt))

        self.embed = w(V, C)
        self.layers = torch.nn.ModuleList()
        for _ in range(c["num_hidden_layers"]):
            L = torch.nn.Module()
            L.ln1, L.ln2 = ones(C), ones(C)
            L.q, L.qb = w(H * D, C), zeros(H * D)
            L.k, L.kb = w(KV * D, C), zeros(KV * D)
            L.v, L.vb = w(KV * D, C), zeros(KV * D)
            L.o = w(C, H * D)
            L.gate, L.up, L.down = w(I, C), w(I, C), w(C, I)
            self.layers.append(L)
        self.norm = ones(C)
        theta = c.get("rope_theta") or c.get("rope_parameters", {}).get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / theta ** (torch.arange(0, D, 2, device=device).float() / D)

    def rms(self, x, wt):
        x32 = x.float()
        return wt * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)

    def hidden(self, ids, mask):
        B, T = ids.shape
        pos = (mask.long().cumsum(1) - 1).clamp_min(0)
        f = pos.float().unsqueeze(-1) * self.inv_freq
        ang = torch.cat([f, f], -1)
        cos, sin = ang.cos().to(self.embed.dtype).unsqueeze(1), ang.sin().to(self.embed.dtype).unsqueeze(1)

        def rot(x):
            h = x.shape[-1] // 2
            return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin

        causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
        allowed = (causal.unsqueeze(0) & mask.bool().unsqueeze(1)) | torch.eye(T, dtype=torch.bool, device=ids.device)
        allowed = allowed.unsqueeze(1)
        x = F.embedding(ids, self.embed)
        rep = self.H // self.KV
        for L in self.layers:
            n = self.rms(x, L.ln1)
            q = F.linear(n, L.q, L.qb).view(B, T, self.H, self.D).transpose(1, 2)
            k = F.linear(n, L.k, L.kb).view(B, T, self.KV, self.D).transpose(1, 2)
            v = F.linear(n, L.v, L.vb).view(B, T, self.KV, self.D).transpose(1, 2)
            q, k = rot(q), rot(k)
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
            x = x + F.linear(y.transpose(1, 2).reshape(B, T, -1), L.o)
            m = self.rms(x, L.ln2)
            x = x + F.linear(F.silu(F.linear(m, L.gate)) * F.linear(m, L.up), L.down)
        return self.rms(x, self.norm)

    def logits(self, ids, mask):
        return F.linear(self.hidden(ids, mask), self.embed)  # tied embeddings


class Critic(torch.nn.Module):
    def __init__(self, c, dtype, device):
        super().__init__()
        self.body = Qwen2(c, dtype, device)
        self.head = torch.nn.Parameter(torch.zeros(1, c["hidden_size"], dtype=dtype, device=device))
        self.bias = torch.nn.Parameter(torch.zeros(1, dtype=dtype, device=device))

    def forward(self, ids, mask):
        return F.linear(self.body.hidden(ids, mask), self.head, self.bias).squeeze(-1).float()


class MasterAdamW:
    """AdamW on float32 master copies of low-precision parameters (as lib/rl/optimizer.cpp)."""

    def __init__(self, params, lr):
        self.params = [p for p in params]
        self.master = [p.detach().float().clone().requires_grad_(True) for p in self.params]
        self.opt = torch.optim.AdamW(self.master, lr=lr, weight_decay=0.0, eps=1e-8)

    def step(self, max_norm):
        grads = [p.grad for p in self.params]
        norm = torch.nn.utils.clip_grad_norm_(self.params, max_norm)
        for m, g in zip(self.master, grads):
            m.grad = g.float()
        self.opt.step()
        with torch.no_grad():
            for p, m in zip(self.params, self.master):
                p.copy_(m)
                p.grad = None
        return float(norm)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--prompt", type=int, default=512, help="tokens of each sequence that are not actions")
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    c = json.load(open(a.config))
    dtype = getattr(torch, a.dtype)
    torch.manual_seed(0)
    actor, critic = Qwen2(c, dtype, a.device), Critic(c, dtype, a.device)
    aopt, copt = MasterAdamW(actor.parameters(), 1e-6), MasterAdamW(critic.parameters(), 1e-6)
    V = c["vocab_size"]
    ids = torch.randint(0, min(V, 800), (a.batch, a.seq), device=a.device)
    att = torch.ones_like(ids, dtype=torch.bool)
    mask = torch.zeros(a.batch, a.seq - 1, device=a.device)
    mask[:, a.prompt - 1:] = 1
    with torch.no_grad():
        old = torch.cat([torch.log_softmax(actor.logits(ids[i:i + a.micro_batch], att[i:i + a.micro_batch])[:, :-1].float(), -1)
                         .gather(-1, ids[i:i + a.micro_batch, 1:, None]).squeeze(-1)
                         for i in range(0, a.batch, a.micro_batch)])
        old_v = torch.cat([critic(ids[i:i + a.micro_batch], att[i:i + a.micro_batch])[:, :-1]
                           for i in range(0, a.batch, a.micro_batch)])
    adv = torch.randn_like(old)
    ret = old_v + adv
    N = mask.sum()
    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    times = []
    for step in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        for i in range(0, a.batch, a.micro_batch):
            s = slice(i, i + a.micro_batch)
            logits = actor.logits(ids[s], att[s])
            logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[s, 1:, None]).squeeze(-1)
            ratio = torch.exp(logp - old[s])
            pg = -torch.minimum(ratio * adv[s], ratio.clamp(0.8, 1.28) * adv[s])
            ((pg * mask[s]).sum() / N).backward()
            with torch.no_grad():  # the metrics kbtrain computes
                lp = torch.log_softmax(logits[:, :-1].float(), -1)
                (-(lp.exp() * lp).sum(-1) * mask[s]).sum().item()
            v = critic(ids[s], att[s])[:, :-1]
            vc = old_v[s] + (v - old_v[s]).clamp(-0.2, 0.2)
            vl = 0.5 * torch.maximum((v - ret[s]) ** 2, (vc - ret[s]) ** 2)
            ((vl * mask[s]).sum() / N).backward()
        aopt.step(1.0)
        copt.step(1.0)
        sync()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({"impl": "pytorch-python", "tokens_per_s": a.batch * a.seq / med, "step_s_median": med,
                      "step_s": times, "batch": a.batch, "seq": a.seq, "micro_batch": a.micro_batch,
                      "dtype": a.dtype, "torch": torch.__version__,
                      "params_actor": sum(p.numel() for p in actor.parameters())}))


if __name__ == "__main__":
    main()
