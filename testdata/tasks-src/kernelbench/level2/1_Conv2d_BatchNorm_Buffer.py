import torch
import torch.nn as nn


class Model(nn.Module):
    """A module with buffers: batch-norm running statistics and a registered
    per-channel scale."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)
        self.register_buffer("channel_scale", torch.linspace(0.5, 1.5, out_channels).view(1, -1, 1, 1))

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) * self.channel_scale


batch_size = 4
in_channels = 3
out_channels = 8
height, width = 16, 16
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
