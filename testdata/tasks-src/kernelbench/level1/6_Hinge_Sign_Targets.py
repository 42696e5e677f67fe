import torch
import torch.nn as nn


class Model(nn.Module):
    """Float targets in {-1, 1} and non-negative predictions; get_inputs does
    not script (starred shape), so the inputs are recorded as a spec."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets.unsqueeze(1), min=0))


batch_size = 64
input_shape = (32,)


def get_inputs():
    predictions = torch.rand(batch_size, *input_shape) * 3.0
    targets = torch.randint(0, 2, (batch_size,)).float() * 2 - 1
    return [predictions, targets]


def get_init_inputs():
    return []
