"""Attack: native code loaded by torch itself (`torch.ops.load_library`
is a dlopen), past the build stage and with no ctypes in sight. Here it
loads libm, already in the process (harmless); the same call runs any
library's constructors. Refused as py-native, as ctypes is."""
import torch
import torch.nn as nn

torch.ops.load_library("/lib/x86_64-linux-gnu/libm.so.6")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
