# Attack (2026-12-07, a static probe): one use each of private modules (_io, _operator,
# _signal, _socket, _imp, torch._utils, torch._ops, torch.utils._device), resource, sys beyond
# its plain facts (meta_path, addaudithook, monitoring, exc_info), numpy's file writers,
# storage from_file, torch.serialization, torch.hub, torch.fx, streams by namespace and
# the allocator's limit. Each is refused (py-private-api, py-process, py-introspection,
# py-io, py-dynamic-code, py-side-stream, py-allocator).
import _io
import _operator
import _signal
import _socket
import _imp
import resource
import sys
import numpy as np
import torch
import torch.nn as nn
import torch._utils
import torch.fx.graph_module
import torch.serialization

A = _io.FileIO("/etc/hostname", "rb")
B = _io.open("/etc/hostname")
C = torch._utils._import_dotted_name("ctypes")
D = torch.fx.graph_module._exec_with_source
E = torch._ops.ops.load_library
F = torch.cuda.streams.Stream
G = torch.cuda.streams.Event
H = torch.cuda.graphs.CUDAGraph
I = torch.Stream
J = _operator.attrgetter("x")
K = sys.meta_path
L = sys.addaudithook
M = sys.monitoring
N = np.save
O = torch.UntypedStorage.from_file
P = np.lib.format.open_memmap
Q = torch.serialization.load
R = torch.hub._import_module
S = _signal.raise_signal
T = resource.setrlimit
U = torch.cuda.memory_allocated
V = torch.cuda.set_per_process_memory_fraction
W = torch.accelerator.set_stream
X = torch.utils._device.DeviceContext
Y = torch.cuda.streams.ExternalStream
Z = sys.exc_info


class ModelNew(nn.Module):
    def forward(self, x):
        return x
