#!/usr/bin/env python3
"""Generates the seed catalog of kbsynth's composer (testdata/synth/seeds.json).

    python3 scripts/synth_seeds.py [-o testdata/synth/seeds.json]

It crawls the installed packages:
  * torch.nn           every public nn.Module subclass
  * torch.nn.functional every public function
  * torch              every public function of the top-level namespace
  * transformers       transformers.activations and the modeling files of a
                       few model families (classes that are nn.Modules)
and records, for each, its signature (where inspect can read it) and a status:
  composable  a hand-written entry below (CURATED / TRANSFORMERS) says what the
              operator takes (ranks, dtypes, argument ranges) and which shape
              rule of lib/synth/ops.cpp applies;
  excluded    stochastic (dropout, random sampling, uninitialised memory) or
              otherwise unfit for a deterministic task; the reason is recorded;
  uncurated   crawled, but nobody has written its shape rule yet.
docs/kbsynth-synthesis.md describes every field. The generated file is
committed; tests read it and never need `transformers` installed.

transformers modules are made standalone: the class source (decorators
removed) plus the same-module helpers it names, under a small prelude, is
executed without transformers and must reproduce the original module's output
with the same weights; only verified entries become composable, and their
source is embedded in the catalog (a task never imports transformers).

Python is used here because the catalog is read off the installed torch and
transformers themselves.
"""

import argparse
import ast
import datetime
import inspect
import json
import os
import re
import sys
import textwrap
import types
import warnings

warnings.filterwarnings("ignore")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# ---- stochastic and unfit operators ---------------------------------------

# (regex on the last name component, reason). Checked before curation.
EXCLUDE = [
    (r"(?i)dropout", "stochastic: dropout draws a random mask in training mode (KernelBench modules run in training mode)"),
    (r"(?i)^rrelu", "stochastic: RReLU samples its negative slope in training mode"),
    (r"(?i)^rand|randn|randint|randperm|^normal$|^bernoulli|^multinomial|^poisson$|binomial", "stochastic: random sampling"),
    (r"(?i)gumbel", "stochastic: Gumbel noise"),
    (r"(?i)^fractional", "stochastic: fractional max pooling draws random pooling regions"),
    (r"(?i)^empty", "nondeterministic: returns uninitialised memory"),
    (r"(?i)seed$|^seed|get_rng_state|set_rng_state", "random number generator state, not an operator"),
    (r"(?i)^(save|load|set_|get_|is_|use_deterministic|compile|export|jit|vmap|cond)", "not a tensor operator (I/O, global state, predicates, transforms)"),
]

# Entries of a curated op: rule (lib/synth/ops.cpp), ranks accepted, dtypes,
# args (sampled: {"name", "type": float|int|bool|choice, "range"|"choices"}).
FLOAT = ["float32"]


def a_float(name, lo, hi):
    return {"name": name, "type": "float", "range": [lo, hi]}


def a_choice(name, *choices):
    return {"name": name, "type": "choice", "choices": list(choices)}


def ew(args=(), domain="any", ranks=(1, 2, 3, 4, 5)):
    return {"rule": "elementwise", "ranks": list(ranks), "args": list(args), "domain": domain}


CURATED = {}


def cur(names, entry):
    for n in names.split():
        CURATED[n] = dict(entry)


# Elementwise activations: modules, functionals, torch functions.
cur("torch.nn.ReLU torch.nn.ReLU6 torch.nn.SiLU torch.nn.Mish torch.nn.Sigmoid torch.nn.Tanh torch.nn.SELU "
    "torch.nn.Softsign torch.nn.Hardsigmoid torch.nn.Hardswish torch.nn.Tanhshrink torch.nn.LogSigmoid "
    "torch.nn.PReLU", ew())
cur("torch.nn.GELU torch.nn.functional.gelu", ew([a_choice("approximate", "none", "tanh")]))
cur("torch.nn.Hardtanh torch.nn.functional.hardtanh", ew([a_float("min_val", -2.0, -0.5), a_float("max_val", 0.5, 2.0)]))
cur("torch.nn.LeakyReLU torch.nn.functional.leaky_relu", ew([a_float("negative_slope", 0.01, 0.3)]))
cur("torch.nn.ELU torch.nn.CELU torch.nn.functional.elu torch.nn.functional.celu", ew([a_float("alpha", 0.5, 2.0)]))
cur("torch.nn.Softplus torch.nn.functional.softplus", ew([a_float("beta", 0.5, 2.0), a_float("threshold", 10.0, 20.0)]))
cur("torch.nn.Softshrink torch.nn.Hardshrink torch.nn.functional.softshrink torch.nn.functional.hardshrink",
    ew([a_float("lambd", 0.1, 1.0)]))
cur("torch.nn.Threshold", ew([a_float("threshold", -0.5, 0.5), a_float("value", -1.0, 1.0)]))
cur("torch.nn.functional.relu torch.nn.functional.relu6 torch.nn.functional.silu torch.nn.functional.mish "
    "torch.nn.functional.selu torch.nn.functional.softsign torch.nn.functional.hardsigmoid "
    "torch.nn.functional.hardswish torch.nn.functional.tanhshrink torch.nn.functional.logsigmoid "
    "torch.relu torch.sigmoid torch.tanh torch.abs torch.neg torch.sin torch.cos torch.erf torch.square "
    "torch.exp torch.expm1 torch.atan torch.sign torch.floor torch.ceil torch.round torch.sinc", ew())
cur("torch.sqrt torch.log torch.rsqrt torch.log1p torch.log2 torch.reciprocal", ew(domain="positive"))
cur("torch.clamp", ew([a_float("min", -2.0, -0.1), a_float("max", 0.1, 2.0)]))
# Binary: the second operand a scalar constant, a learned broadcast parameter
# (a bias or scale per channel) or another input of the same shape.
cur("torch.add torch.sub torch.mul", {"rule": "binary", "ranks": [1, 2, 3, 4, 5], "args": [],
                                     "operands": ["scalar", "parameter", "input"], "scalar_range": [-2.0, 2.0]})
cur("torch.div", {"rule": "binary", "ranks": [1, 2, 3, 4, 5], "args": [], "operands": ["scalar"],
                  "scalar_range": [0.5, 4.0]})
cur("torch.maximum torch.minimum", {"rule": "binary", "ranks": [1, 2, 3, 4, 5], "args": [],
                                    "operands": ["parameter", "input"]})
# GEMM-like.
cur("torch.nn.Linear", {"rule": "linear", "ranks": [2, 3], "args": [a_choice("bias", True, False)]})
cur("torch.matmul", {"rule": "matmul", "ranks": [2, 3], "args": []})
cur("torch.mm", {"rule": "matmul", "ranks": [2], "args": []})
cur("torch.bmm", {"rule": "matmul", "ranks": [3], "args": []})
cur("torch.nn.functional.scaled_dot_product_attention",
    {"rule": "attention", "ranks": [4], "args": [a_choice("is_causal", False, True)]})
# Convolutions (channels first).
for d in (1, 2, 3):
    conv_args = [a_choice("kernel_size", 1, 3, 5) if d < 3 else a_choice("kernel_size", 1, 3),
                 a_choice("stride", 1, 1, 2), a_choice("padding", 0, 1), a_choice("bias", True, False)]
    cur(f"torch.nn.Conv{d}d", {"rule": "conv", "ranks": [d + 2], "spatial": d, "transposed": False, "args": conv_args})
    cur(f"torch.nn.ConvTranspose{d}d", {"rule": "conv", "ranks": [d + 2], "spatial": d, "transposed": True,
                                        "args": conv_args})
    pool = {"rule": "pool", "ranks": [d + 2], "spatial": d, "args": [a_choice("kernel_size", 2, 3), a_choice("stride", 1, 2)]}
    cur(f"torch.nn.MaxPool{d}d torch.nn.AvgPool{d}d", pool)
    cur(f"torch.nn.functional.max_pool{d}d torch.nn.functional.avg_pool{d}d", pool)
    cur(f"torch.nn.AdaptiveAvgPool{d}d torch.nn.AdaptiveMaxPool{d}d",
        {"rule": "adaptive_pool", "ranks": [d + 2], "spatial": d, "args": [a_choice("output_size", 1, 2, 4)]})
    cur(f"torch.nn.BatchNorm{d}d", {"rule": "channel_norm", "ranks": [2, 3] if d == 1 else [d + 2], "args": []})
    cur(f"torch.nn.InstanceNorm{d}d", {"rule": "channel_norm", "ranks": [3] if d == 1 else [d + 2],
                                       "args": [a_choice("affine", False, True)]})
cur("torch.nn.GroupNorm", {"rule": "group_norm", "ranks": [3, 4, 5], "args": [a_choice("num_groups", 2, 4, 8)]})
cur("torch.nn.LayerNorm torch.nn.RMSNorm", {"rule": "last_norm", "ranks": [2, 3, 4], "args": []})
cur("torch.nn.Upsample", {"rule": "upsample", "ranks": [3, 4, 5], "args": [a_choice("mode", "nearest")]})
cur("torch.nn.functional.interpolate", {"rule": "upsample", "ranks": [3, 4, 5], "args": [a_choice("mode", "nearest", "linear")]})
cur("torch.nn.PixelShuffle", {"rule": "pixel_shuffle", "ranks": [4], "args": [a_choice("upscale_factor", 2)]})
cur("torch.nn.functional.pad", {"rule": "pad", "ranks": [3, 4, 5], "args": [a_choice("pad", 1, 2), a_float("value", -1.0, 1.0)]})
cur("torch.nn.GLU torch.nn.functional.glu", {"rule": "glu", "ranks": [2, 3, 4], "args": []})
# Shape-preserving along a dim.
cur("torch.nn.Softmax torch.nn.LogSoftmax torch.nn.Softmin torch.nn.functional.softmax "
    "torch.nn.functional.log_softmax torch.nn.functional.normalize torch.cumsum torch.logcumsumexp",
    {"rule": "dim", "ranks": [2, 3, 4, 5], "args": []})
# Reductions over one non-batch dim.
cur("torch.sum torch.mean torch.amax torch.amin torch.logsumexp torch.std torch.var",
    {"rule": "reduce", "ranks": [2, 3, 4, 5], "args": [a_choice("keepdim", False, True)]})
cur("torch.argmax torch.argmin", {"rule": "reduce", "ranks": [2, 3, 4, 5], "args": [], "terminal": True,
                                  "out_dtype": "int64"})
cur("torch.nn.Flatten torch.flatten", {"rule": "flatten", "ranks": [3, 4, 5], "args": []})
cur("torch.transpose", {"rule": "transpose", "ranks": [3, 4, 5], "args": []})
# Losses against a second input: a scalar, so the last op.
cur("torch.nn.functional.mse_loss torch.nn.functional.l1_loss torch.nn.functional.smooth_l1_loss "
    "torch.nn.functional.huber_loss torch.nn.MSELoss torch.nn.L1Loss torch.nn.SmoothL1Loss torch.nn.HuberLoss",
    {"rule": "loss", "ranks": [2, 3, 4, 5], "args": [], "terminal": True})
cur("torch.nn.functional.cosine_similarity", {"rule": "pairwise", "ranks": [2, 3, 4], "args": []})

for entry in CURATED.values():
    entry.setdefault("dtypes", FLOAT)

# ---- transformers: standalone modules --------------------------------------

TRANSFORMERS_FAMILIES = ["llama", "mistral", "qwen2", "gemma", "t5", "bert", "gpt2", "phi3", "opt"]

# Prelude executed before an extracted class (it stands in for the names a
# modeling file imports). ACT2FN maps to torch's own modules; verification
# proves each use equal to transformers' activations.
PRELUDE = '''import math
from types import SimpleNamespace
from typing import Optional, Tuple
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

ACT2FN = {"silu": nn.SiLU(), "gelu": nn.GELU(), "gelu_pytorch_tanh": nn.GELU(approximate="tanh"),
          "relu": nn.ReLU()}
'''

# name -> how to build and call it. "config": fields of a SimpleNamespace
# passed as the only constructor argument; "init": positional constructor
# arguments by dim name; "dims": sampled sizes (lists are [lo, hi]); the
# input is (batch, seq_len, hidden) unless "input" says otherwise; "cost":
# "memory" (elementwise/norm) or "mlp" (n_proj GEMMs of hidden x intermediate).
T_ACT = {"dims": {"hidden": [256, 4096]}, "cost": "memory"}
T_NORM = {"init": ["hidden"], "init_kw": {"eps": 1e-6}, "dims": {"hidden": [256, 4096]}, "cost": "memory"}
TRANSFORMERS = {
    "transformers.activations.NewGELUActivation": T_ACT,
    "transformers.activations.FastGELUActivation": T_ACT,
    "transformers.activations.QuickGELUActivation": T_ACT,
    "transformers.activations.AccurateGELUActivation": T_ACT,
    "transformers.activations.LaplaceActivation": T_ACT,
    "transformers.activations.ReLUSquaredActivation": T_ACT,
    "transformers.activations.MishActivation": T_ACT,
    "transformers.activations.GELUActivation": T_ACT,
    "transformers.activations.GELUTanh": T_ACT,
    "transformers.activations.PytorchGELUTanh": T_ACT,
    "transformers.activations.SiLUActivation": T_ACT,
    "transformers.activations.SqrtSoftplusActivation": T_ACT,
    "transformers.models.phi3.modeling_phi3.Phi3RMSNorm": T_NORM,
    "transformers.models.bert.modeling_bert.BertPooler": {
        "config": {"hidden_size": "hidden"}, "dims": {"hidden": [256, 2048]}, "cost": "mlp", "n_proj": 1,
        "output": "pooled"},
    "transformers.models.phi3.modeling_phi3.Phi3MLP": {
        "config": {"hidden_size": "hidden", "intermediate_size": "intermediate", "hidden_act": "silu"},
        "dims": {"hidden": [256, 2048], "intermediate": [512, 5632]}, "cost": "mlp", "n_proj": 3},
    "transformers.models.llama.modeling_llama.LlamaRMSNorm": T_NORM,
    "transformers.models.mistral.modeling_mistral.MistralRMSNorm": T_NORM,
    "transformers.models.qwen2.modeling_qwen2.Qwen2RMSNorm": T_NORM,
    "transformers.models.gemma.modeling_gemma.GemmaRMSNorm": dict(T_NORM, init=["hidden"], init_kw={"eps": 1e-6}),
    "transformers.models.t5.modeling_t5.T5LayerNorm": T_NORM,
    "transformers.models.llama.modeling_llama.LlamaMLP": {
        "config": {"hidden_size": "hidden", "intermediate_size": "intermediate", "hidden_act": "silu",
                   "mlp_bias": False},
        "dims": {"hidden": [256, 2048], "intermediate": [512, 5632]}, "cost": "mlp", "n_proj": 3},
    "transformers.models.mistral.modeling_mistral.MistralMLP": {
        "config": {"hidden_size": "hidden", "intermediate_size": "intermediate", "hidden_act": "silu"},
        "dims": {"hidden": [256, 2048], "intermediate": [512, 5632]}, "cost": "mlp", "n_proj": 3},
    "transformers.models.qwen2.modeling_qwen2.Qwen2MLP": {
        "config": {"hidden_size": "hidden", "intermediate_size": "intermediate", "hidden_act": "silu"},
        "dims": {"hidden": [256, 2048], "intermediate": [512, 5632]}, "cost": "mlp", "n_proj": 3},
    "transformers.models.gemma.modeling_gemma.GemmaMLP": {
        "config": {"hidden_size": "hidden", "intermediate_size": "intermediate", "hidden_act": "gelu_pytorch_tanh"},
        "dims": {"hidden": [256, 2048], "intermediate": [512, 5632]}, "cost": "mlp", "n_proj": 3},
    "transformers.models.bert.modeling_bert.BertIntermediate": {
        "config": {"hidden_size": "hidden", "intermediate_size": "intermediate", "hidden_act": "gelu"},
        "dims": {"hidden": [256, 2048], "intermediate": [512, 4096]}, "cost": "mlp", "n_proj": 1},
}
# Some dims as concrete values for verification.
VERIFY_DIMS = {"hidden": 64, "intermediate": 96, "batch": 2, "seq_len": 5}


def last(name):
    return name.rsplit(".", 1)[-1]


def signature_of(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        return str(inspect.signature(target))
    except (TypeError, ValueError):
        doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
        return doc[0][:200] if doc else None


def excluded_reason(name, obj):
    for pattern, reason in EXCLUDE:
        if re.search(pattern, last(name)):
            return reason
    if inspect.isclass(obj) and issubclass(obj, nn.Module):
        for sub in ("Dropout",):
            if sub in name:
                return "stochastic: dropout"
    return None


def entry_for(name, source, kind, obj):
    e = {"name": name, "source": source, "kind": kind, "signature": signature_of(obj)}
    why = excluded_reason(name, obj)
    if why:
        e.update(status="excluded", reason=why)
    elif name in CURATED:
        e.update(status="composable", **CURATED[name])
    else:
        e.update(status="uncurated", reason="no shape rule written for it yet")
    return e


def crawl_torch():
    out = []
    for n in sorted(dir(nn)):
        obj = getattr(nn, n)
        if n.startswith("_") or not inspect.isclass(obj) or not issubclass(obj, nn.Module):
            continue
        if obj.__module__.startswith("torch.nn.modules.container") or n in ("Module",):
            e = {"name": "torch.nn." + n, "source": "torch.nn", "kind": "module", "signature": signature_of(obj),
                 "status": "excluded", "reason": "container or base class, not an operator"}
            out.append(e)
            continue
        out.append(entry_for("torch.nn." + n, "torch.nn", "module", obj))
    for n in sorted(dir(F)):
        obj = getattr(F, n)
        if n.startswith("_") or inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
            continue
        out.append(entry_for("torch.nn.functional." + n, "torch.nn.functional", "function", obj))
    for n in sorted(dir(torch)):
        obj = getattr(torch, n)
        if n.startswith("_") or inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj) or not n[0].islower():
            continue
        out.append(entry_for("torch." + n, "torch", "function", obj))
    missing = sorted(set(CURATED) - {e["name"] for e in out})
    if missing:
        raise SystemExit("curated operators not found in this torch: " + ", ".join(missing))
    return out


# ---- transformers ----------------------------------------------------------

class _Free(ast.NodeVisitor):
    """Names a class or function reads but does not define."""

    def __init__(self):
        self.loaded, self.bound = set(), set()

    def visit_Name(self, node):
        (self.loaded if isinstance(node.ctx, ast.Load) else self.bound).add(node.id)

    def visit_arg(self, node):
        self.bound.add(node.arg)

    def visit_FunctionDef(self, node):
        self.bound.add(node.name)
        for d in node.decorator_list:
            self.visit(d)
        self.generic_visit(node)


def _strip_decorators(src):
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            node.decorator_list = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            for a in node.args.args + node.args.kwonlyargs:
                a.annotation = None
    return ast.unparse(tree)


def standalone_source(cls):
    """(source, None) or (None, why not)."""
    module = sys.modules[cls.__module__]
    prelude_names = set(dir(__builtins__)) | {"math", "SimpleNamespace", "Optional", "Tuple", "torch", "nn", "F",
                                              "Tensor", "ACT2FN", "self", "__class__"}
    pieces, done, todo = [], set(), [cls]
    while todo:
        obj = todo.pop()
        if obj.__name__ in done:
            continue
        done.add(obj.__name__)
        try:
            src = _strip_decorators(textwrap.dedent(inspect.getsource(obj)))
        except (OSError, TypeError) as e:
            return None, f"source of {obj.__name__} unavailable: {e}"
        v = _Free()
        v.visit(ast.parse(src))
        for name in sorted(v.loaded - v.bound - prelude_names - {obj.__name__}):
            dep = getattr(module, name, None)
            if dep is None:
                return None, f"{obj.__name__} reads {name}, which is not in its module"
            if (inspect.isclass(dep) or inspect.isfunction(dep)) and getattr(dep, "__module__", "") == module.__name__:
                todo.append(dep)
            else:
                return None, f"{obj.__name__} needs {name} from {getattr(dep, '__module__', '?')} (not standalone)"
        pieces.append(src)
    return "\n\n\n".join(reversed(pieces)) + "\n", None


def _build(cls, spec, dims):
    if "config" in spec:
        cfg = {k: (dims[v] if isinstance(v, str) and v in dims else v) for k, v in spec["config"].items()}
        return cls(types.SimpleNamespace(**cfg))
    return cls(*[dims[d] for d in spec.get("init", [])], **spec.get("init_kw", {}))


def verify_standalone(cls, spec, src):
    ns = {}
    exec(compile(PRELUDE + "\n" + src, f"<standalone {cls.__name__}>", "exec"), ns)
    torch.manual_seed(0)
    orig = _build(cls, spec, VERIFY_DIMS)
    mine = _build(ns[cls.__name__], spec, VERIFY_DIMS)
    mine.load_state_dict(orig.state_dict())
    x = torch.randn(VERIFY_DIMS["batch"], VERIFY_DIMS["seq_len"], VERIFY_DIMS["hidden"])
    with torch.no_grad():
        a, b = orig(x), mine(x)
    if isinstance(a, tuple):
        return "returns a tuple"
    if not torch.equal(a, b):
        return f"standalone copy differs from transformers (max abs diff {(a - b).abs().max().item():.3g})"
    return None


def crawl_transformers():
    try:
        import importlib
        import transformers
    except ImportError:
        return None, []
    out = []
    mods = ["transformers.activations"] + [f"transformers.models.{f}.modeling_{f}" for f in TRANSFORMERS_FAMILIES]
    for mname in mods:
        try:
            module = importlib.import_module(mname)
        except Exception as e:  # noqa: BLE001
            print(f"synth_seeds: skipping {mname}: {e}", file=sys.stderr)
            continue
        for n in sorted(dir(module)):
            obj = getattr(module, n)
            if not (inspect.isclass(obj) and issubclass(obj, nn.Module) and obj.__module__ == mname):
                continue
            name = f"{mname}.{n}"
            e = {"name": name, "source": "transformers", "kind": "module", "signature": signature_of(obj)}
            if "PreTrainedModel" in n or n.endswith("Model") or "For" in n:
                e.update(status="excluded", reason="a whole model, not an operator")
            elif excluded_reason(name, obj):
                e.update(status="excluded", reason=excluded_reason(name, obj))
            elif name in TRANSFORMERS:
                spec = TRANSFORMERS[name]
                src, why = standalone_source(obj)
                if src is not None and re.search(r"(?i)dropout", src):
                    why = "contains dropout (stochastic)"
                if src is not None and why is None:
                    why = verify_standalone(obj, spec, src)
                if why:
                    e.update(status="uncurated", reason=why)
                else:
                    e.update(status="composable", rule="transformers", ranks=[3], dtypes=FLOAT, args=[],
                             class_name=n, module_source=src, **spec)
                    e["verified"] = "standalone copy equals transformers' module on a (2, 5, 64) input"
            else:
                try:
                    src_text = inspect.getsource(obj)
                except (OSError, TypeError):
                    src_text = ""
                if re.search(r"(?i)dropout", src_text):
                    e.update(status="excluded", reason="contains dropout (stochastic)")
                else:
                    e.update(status="uncurated", reason="no standalone recipe (config, inputs) written for it")
            out.append(e)
    missing = sorted(set(TRANSFORMERS) - {e["name"] for e in out})
    for m in missing:
        print(f"synth_seeds: warning: {m} not found in transformers {transformers.__version__}", file=sys.stderr)
    return transformers.__version__, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("-o", "--out", default=os.path.join(here, "..", "testdata", "synth", "seeds.json"))
    args = ap.parse_args()
    ops = crawl_torch()
    tf_version, tf_ops = crawl_transformers()
    ops += tf_ops
    counts = {}
    for e in ops:
        counts.setdefault(e["source"], {}).setdefault(e["status"], 0)
        counts[e["source"]][e["status"]] += 1
    doc = {
        "format": "kb-synth-seeds",
        "format_version": 1,
        "generated_by": "scripts/synth_seeds.py",
        "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch_version": torch.__version__.split("+")[0],
        "transformers_version": tf_version,
        "prelude": PRELUDE,
        "counts": counts,
        "ops": ops,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for src, c in counts.items():
        print(f"synth_seeds: {src}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())), file=sys.stderr)
    print(f"synth_seeds: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
