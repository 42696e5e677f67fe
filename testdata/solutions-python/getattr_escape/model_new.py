"""Attack: escape attributes by string, where no rule on attribute names
looks: `getattr(len, "__self__")` (the builtins module), then its
`__import__` by a computed name. Here it only calls getpid (harmless). A
literal name is judged as the attribute itself; a computed one could be
any attribute, and is refused."""
import torch
import torch.nn as nn

builtins_module = getattr(len, "__self__")
load = getattr(builtins_module, "__" + "import" + "__")
libc = load("ctypes").CDLL(None)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.pid = libc.getpid()

    def forward(self, x):
        return torch.relu(self.linear(x))
