"""Attack: a module reached through a container, a form of alias the rules
do not follow (`T = torch` is followed; `T = [torch][0]` was not). Through
it, TF32 is switched on for the whole process with no `torch.backends` in
sight. The rule is where the module stands: anywhere but the root of an
attribute chain or a plain alias, it is a value the rules cannot follow."""
import torch
import torch.nn as nn

T = [torch][0]
flags = {"m": T.backends}["m"]
flags.cuda.matmul.allow_tf32 = True


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
