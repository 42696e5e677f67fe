import torch
import torch.nn as nn


class Model(nn.Module):
    """A four-layer MLP with ReLU (a ModuleList walked in order)."""

    def __init__(self, input_size, hidden_sizes, output_size):
        super(Model, self).__init__()
        sizes = [input_size] + list(hidden_sizes) + [output_size]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = torch.relu(x)
        return x


batch_size = 2048
input_size = 4096
hidden_sizes = [4096, 4096, 4096]
output_size = 1024


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_sizes, output_size]
