# Attack (2026-12-07): torch.serialization.load unpickles builtins.exec. Caught by
# py-dynamic-code: deserializers and code loaders by module (torch.serialization, torch.load, pickle, ...).
"""torch.serialization.load (torch.load under another name; the rule names only
`torch.load`) of an in-memory pickle: GLOBAL builtins.exec + REDUCE runs a code
string the rules never read (it puts its function into this module through sys.modules) (torch compute under paper here)."""
import io
import torch
import torch.nn as nn
import torch.serialization

SRC = '''
import sys, torch
def _impl(m, x):
    return torch.relu(torch.addmm(m.linear.bias, x, m.linear.weight.t()))
sys.modules["model_new"]._impl = _impl   # the glue registered this module there
'''
ESC = SRC.replace("\\", "\\u005c").replace("\n", "\\u000a")
try:  # the legacy loader unpickles a "magic number" first: exec runs there
    torch.serialization.load(io.BytesIO(("cbuiltins\nexec\n(V" + ESC + "\ntR.").encode()), weights_only=False)
except RuntimeError:
    pass


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return _impl(self, x)
