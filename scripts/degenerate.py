"""Degenerate tasks: tasks on which a trivial solution passes verification,
so a reward on them measures nothing (docs/task-format.md, `degenerate`).

Used by capture.py after it has run the reference on the inputs of seeds 0
and 1. Two trivial solutions are tried against the reference's outputs, by
the comparison verification makes (|candidate - reference| <= atol + rtol
|reference|), at the tolerance of each precision contract:

  input_independent  the output of seed 0 passes for seed 1: a solution that
                     returns one fixed tensor passes (KernelBench v0
                     level2/66_Matmul_Dropout_Mean_Softmax: a softmax over a
                     dimension of size 1 is all ones whatever the input);
  zeros_pass         an all-zeros output passes for both seeds (a GroupNorm
                     followed by a mean over the group: every output is 0 up
                     to rounding).

The task is flagged when either passes under either contract; the flag
lists the contracts, and lib/reward excludes a candidate judged under one of
them (a task whose outputs are all below 1e-2, e.g. a softmax over 16384
elements, is trivial under the paper contract and a fair task under strict).
"""

import math

import kbtask
from kbtask import torch

# docs/task-format.md, "The precision contract".
CONTRACT_TOLERANCE = {"strict": 1e-4, "paper": 1e-2}


def tolerance_of(contract, tolerance=None):
    """(atol, rtol) of `contract`, tightened field by field by task.json's
    `tolerance` ({atol, rtol}), which can never loosen it."""
    base = CONTRACT_TOLERANCE[contract]
    atol, rtol = base, base
    if tolerance:
        atol = min(atol, float(tolerance.get("atol", atol)))
        rtol = min(rtol, float(tolerance.get("rtol", rtol)))
    return atol, rtol


def _max_abs(outs):
    """The largest |value| over the outputs (inf when any is NaN or
    infinite), in chunks: KernelBench's outputs reach gigabytes."""
    m = 0.0
    for o in outs:
        flat = o.detach().reshape(-1)
        for i in range(0, flat.numel(), kbtask._CHUNK):
            c = flat[i:i + kbtask._CHUNK]
            c = c.double() if not c.is_floating_point() else c
            if not bool(torch.isfinite(c).all()):
                return float("inf")
            m = max(m, float(c.abs().max()))
    return m


def _zeros_pass(outs, atol, rtol):
    """Whether all-zeros passes against `outs`: |0 - r| <= atol + rtol |r|
    for every element, i.e. |r| (1 - rtol) <= atol (non-finite never)."""
    return _max_abs(outs) * (1 - rtol) <= atol


def check(out0, out1, tolerance=None):
    """task.json's `degenerate` object when a trivial solution passes under
    either contract, else None. `contracts` lists the contracts under which
    one passes (a reward judged under another is not affected), `checks`
    which trivial solution passes under which contract."""
    checks = {}  # check -> contracts it passes under
    for name in ("strict", "paper"):
        atol, rtol = tolerance_of(name, tolerance)
        if kbtask.close(out0, out1, atol=atol, rtol=rtol):
            checks.setdefault("input_independent", []).append(name)
        if _zeros_pass(out0, atol, rtol) and _zeros_pass(out1, atol, rtol):
            checks.setdefault("zeros_pass", []).append(name)
    if not checks:
        return None
    diff, biggest = kbtask.max_abs_diff(out0, out1), max(_max_abs(out0), _max_abs(out1))
    contracts = [c for c in ("strict", "paper") if any(c in under for under in checks.values())]
    parts = []
    if "input_independent" in checks:
        if kbtask.close(out0, out1, atol=0, rtol=0):
            parts.append("the output does not depend on the input (seeds 0 and 1 give identical outputs)")
        else:
            parts.append(f"one fixed output passes for every input (seeds 0 and 1 differ by {diff:.3g} at most)")
    if "zeros_pass" in checks:
        parts.append(f"an all-zeros output passes (|output| <= {biggest:.3g})")
    where = " and ".join(f"{c} ({CONTRACT_TOLERANCE[c]:g})" for c in contracts)
    return {"reason": "; ".join(parts) + " under the " + where + " contract" + ("s" if len(contracts) > 1 else ""),
            "contracts": contracts, "checks": checks,
            "max_abs_diff_seeds": _finite_or_none(diff), "max_abs_output": _finite_or_none(biggest)}


def _finite_or_none(x):
    """JSON has no infinity or NaN: null stands for them."""
    return x if math.isfinite(x) else None
