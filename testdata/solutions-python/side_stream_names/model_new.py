# Attack (2026-12-07): streams, events and graphs by other spellings. Caught by
# py-side-stream by namespace (torch.cuda.streams, torch.cuda.graphs, Stream/StreamContext anywhere
# under torch); Event anywhere under torch is py-timer (here under torch.cuda.streams: py-side-stream).
"""py-side-stream / py-timer / py-allocator by other spellings: torch.cuda.streams.Stream,
torch.cuda.streams.Event, torch.Stream, torch.cuda.graphs.CUDAGraph
(the rules match only torch.cuda.Stream/Event/CUDAGraph). Only reached on CUDA."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.side = None

    def forward(self, x):
        if x.is_cuda:
            if self.side is None:
                self.side = torch.cuda.streams.Stream()
            ev = torch.cuda.streams.Event()
            with torch.cuda.StreamContext(self.side):
                y = self.linear(x).clamp_min(0)
            ev.record(self.side)
            g = torch.cuda.graphs.CUDAGraph
            s2 = torch.Stream
            return y
        return self.linear(x).clamp_min(0)
