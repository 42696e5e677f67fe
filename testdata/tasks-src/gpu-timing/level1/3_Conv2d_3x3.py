import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3x3 convolution with bias."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return self.conv(x)


batch_size = 32
in_channels = 256
out_channels = 256
height = width = 128
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
