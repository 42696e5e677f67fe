"""Attack: return at once and finish the output from a thread after the
timed call. Statically py-thread; at run time the worker's seccomp allows
threads, but the output is copied into the harness's buffer inside the call."""
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        out = torch.zeros(x.shape[0], self.linear.out_features, device=x.device)
        threading.Thread(target=lambda: out.copy_(torch.relu(self.linear(x)))).start()
        return out
