# A genuinely different program (what the rule composer makes): a 3-d
# convolution, group normalisation and a softmin over the width. The
# decontamination filter must keep it.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d -> GroupNorm -> Softmin (kbsynth rule composer)"""

    def __init__(self, in_channels, out_channels, kernel_size, num_groups, num_channels):
        super().__init__()
        self.conv3d = nn.Conv3d(in_channels, out_channels, kernel_size, stride=2, padding=1, bias=False)
        self.groupnorm = nn.GroupNorm(num_groups, num_channels)
        self.softmin = nn.Softmin(dim=4)

    def forward(self, x):
        x = self.conv3d(x)
        x = self.groupnorm(x)
        x = self.softmin(x)
        return x


batch_size = 4
in_channels = 8
depth = 6
height = 10
width = 10
out_channels = 16
kernel_size = 3
num_groups = 4
num_channels = 16


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups, num_channels]
