# Attack (a review by attack, 2026-12-07): ended the static checker (TypeError in
# Constants on a dict with a list key), so the verdict was infra_error. Now: constant
# evaluation never raises (an unhashable key is not a constant), the file is read, and
# the import fails at run time (runtime_error), as the code itself does.
"""Ends the static checker with an uncaught TypeError: Constants (built for every
file, load_inline or not) evaluates a module-level dict with a list key and
hashes it. Never evaluated at run time: the static stage ends first."""
import torch.nn as nn

KEYS = {["k"]: "v"}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)   # wrong: no ReLU
