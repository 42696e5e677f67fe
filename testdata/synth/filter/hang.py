# kbsynth filter test: the forward ignores the worker's soft time limit
# (SIGALRM) and never returns, so only the driver's kill stops it.
import signal
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        time.sleep(3600)
        return x


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
