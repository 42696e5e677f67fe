"""Attack: exec reached through the module's __builtins__ (a name no rule
listed); the exec'd text imports what the rules refuse (gc, ctypes), which
no rule can then read."""
import torch
import torch.nn as nn

B = __builtins__
run = B["exec"] if isinstance(B, dict) else B.exec
ns = {}
run("import gc, ctypes\nn_objects = len(gc.get_objects())\n", ns)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        assert ns["n_objects"] > 1000

    def forward(self, x):
        return torch.relu(self.linear(x))
