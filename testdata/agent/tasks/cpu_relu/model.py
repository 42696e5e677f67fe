import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a CPU tensor (a task for testing the agent loop without a GPU)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
