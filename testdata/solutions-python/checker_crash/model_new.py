# Attack (a review by attack, 2026-12-07): ended the static checker (AttributeError in
# SourceMap.of on `[] + [...]`), so the verdict was infra_error (no reward, and no penalty).
# Now: constant evaluation and source maps never raise, and any other failure of the
# checker on a file is `py-unanalyzable`. The solution is read, nothing in it is refused,
# and its wrong forward (no ReLU) is `incorrect`.
"""Ends the static checker (scripts/pycheck.py) with an uncaught AttributeError:
SourceMap.of on `[] + [...]` (an empty list on the left of a `+`) calls
utf8_len([]). The solution itself returns a wrong answer (x W^T + b, no ReLU)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = None
try:
    ext = load_inline(name="crash_ext", cpp_sources=[] + ["int f() { return 1; }"], functions=["f"])
except Exception:
    pass


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)   # wrong: no ReLU
