"""Stands in for the paper's utils/verification.py, which patches
torch.nn.functional while ModelNew runs: a harness file of the paper's, never
run, imported or checked by this judge (docs/solution-format.md)."""
import torch.nn.functional as F

F.relu = None
