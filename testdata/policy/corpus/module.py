import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d -> GroupNorm -> GELU, then a residual add."""

    def __init__(self, in_channels: int = 64, groups: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, in_channels, kernel_size=3, padding=1)
        self.norm = nn.GroupNorm(groups, in_channels, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(self.norm(self.conv(x)), approximate="tanh")
        return x + y  # shape: (N, C, H, W)


def get_inputs():
    return [torch.randn(16, 64, 128, 128, device="cuda", dtype=torch.float32)]


def get_init_inputs():
    return [64, 8]

if __name__ == '__main__':
    m = Model().cuda().eval()
    with torch.no_grad():
        out = m(*get_inputs())
    print(f"{out.shape=} {out.abs().max().item():.3e}")
	# a tab-indented comment, then trailing spaces   
