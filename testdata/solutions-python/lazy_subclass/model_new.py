"""Attack: return a lazy tensor subclass that computes only when looked at
(the CUDA-L1 "17.8x" level-1 solution's trick). Statically: py-tensor-subclass.
At run time the harness copies every output into its own buffer inside the
timed call, so the work is done (and timed) there, or the call fails."""
import torch
import torch.nn as nn


class Lazy(torch.Tensor):
    @staticmethod
    def __new__(cls, thunk, like):
        t = torch.Tensor._make_subclass(cls, torch.empty_like(like), False)
        t._thunk = thunk
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args = tuple(a._thunk() if isinstance(a, Lazy) else a for a in args)
        return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        like = torch.empty(x.shape[0], self.linear.out_features)
        return Lazy(lambda: torch.relu(self.linear(x)), like)
