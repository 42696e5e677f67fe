import os
import signal
import sys
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    """Built by scripts/baseline.py, it ignores SIGALRM and sleeps: a build
    that baseline.py's alarm cannot reach (the kbsynth test's stand-in for a
    call stuck in C++; on the H200, KernelBench's LSTM builds). Captured
    anywhere else, it is an ordinary model."""

    def __init__(self):
        super().__init__()
        if os.path.basename(sys.argv[0]) == "baseline.py":
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            time.sleep(120)

    def forward(self, x):
        return x * 2.0 + 1.0


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
