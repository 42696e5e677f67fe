"""The static rules for Python-format solutions (docs/rules/python.md).

    python pycheck.py ROOT FILE... [--torch-compute error|warning|off] [--extract] [--source-map]

Parses each FILE (relative to ROOT) with Python's own `ast` -- the code is
read, never run -- and prints one JSON object per finding:
{"rule", "severity", "file", "line", "column", "message", "source_line"},
then {"done": true, "files": N}. A file that does not parse prints
{"parse_error": "FILE:LINE:COL: message"}; one whose analysis fails in a way
no rule foresaw prints a `py-unanalyzable` finding (the file's failure, a
static violation), never an ending of this script (which would be
infra_error: no reward, and no penalty). --extract also prints each
literal load_inline call's arguments ({"extension": {...}}, read by
lib/build/python_build.cpp); --source-map, where each character of its
cpp_sources and cuda_sources strings was written in the file
({"source_map": {...}}, read by lib/eval/python_static.cpp: the Clang rules'
findings in those strings point at the .py file).

The rules judge what a construct does, not how it is spelled: an import
binds a name, and every later use of that name (an alias, `from x import y`)
is what is checked. They are the first line; the run time does not depend on
them (outputs are copied into the harness's buffers inside the timed call,
and the reference worker checks them: docs/threat-model.md).
"""

import ast
import io
import json
import re
import sys
import tokenize

# Modules whose use is a rule of its own: module prefix -> (rule, why).
MODULE_RULES = {
    "threading": ("py-thread", "starts threads: work outside the timed call"),
    "_thread": ("py-thread", "starts threads: work outside the timed call"),
    "concurrent": ("py-thread", "starts threads or processes: work outside the timed call"),
    "asyncio": ("py-thread", "runs an event loop: work outside the timed call"),
    "multiprocessing": ("py-process", "starts processes"),
    "subprocess": ("py-process", "starts processes"),
    "signal": ("py-process", "handles signals"),
    "ctypes": ("py-native", "calls native code outside the build (ctypes)"),
    "cffi": ("py-native", "calls native code outside the build (cffi)"),
    "mmap": ("py-native", "maps memory directly"),
    "gc": ("py-introspection", "reaches every object of the process, the harness's included (gc)"),
    "inspect": ("py-introspection", "walks frames and objects of the harness (inspect)"),
    "importlib": ("py-dynamic-code", "imports modules by computed names"),
    "builtins": ("py-monkeypatch", "reaches the interpreter's builtins"),
    "socket": ("py-io", "opens network connections"),
    "urllib": ("py-io", "opens network connections"),
    "http": ("py-io", "opens network connections"),
    "requests": ("py-io", "opens network connections"),
    "shutil": ("py-io", "reads or writes files"),
    "pathlib": ("py-io", "reads or writes files"),
    # Deserializers and code loaders (a review by attack, 2026-12-07): a
    # pickle names any callable and its arguments (builtins.exec, "code"),
    # and unpickling calls it; the others generate or fetch code and run it.
    "pickle": ("py-dynamic-code", "unpickles objects: a pickle runs any code it names"),
    "copyreg": ("py-dynamic-code", "registers pickling constructors: a pickle runs any code it names"),
    "shelve": ("py-dynamic-code", "unpickles objects from files: a pickle runs any code it names"),
    "dill": ("py-dynamic-code", "unpickles objects: a pickle runs any code it names"),
    "cloudpickle": ("py-dynamic-code", "unpickles objects: a pickle runs any code it names"),
    "joblib": ("py-dynamic-code", "unpickles objects: a pickle runs any code it names"),
    "jsonpickle": ("py-dynamic-code", "unpickles objects: runs any code it names"),
    "yaml": ("py-dynamic-code", "loads objects by name (yaml's unsafe loaders run code)"),
    "torch.serialization": ("py-dynamic-code", "unpickles objects (torch.load under another name): a pickle runs "
                            "any code it names"),
    "torch.hub": ("py-dynamic-code", "downloads and imports code"),
    "torch.package": ("py-dynamic-code", "imports code from archives"),
    "torch.fx": ("py-dynamic-code", "generates Python code and runs it (GraphModule, _exec_with_source)"),
    "torch.utils.model_zoo": ("py-dynamic-code", "downloads and unpickles objects"),
    "numpy.lib.format": ("py-io", "reads or writes .npy files (and unpickles them)"),
    "numpy.lib.npyio": ("py-io", "reads or writes files (and unpickles them)"),
    # Frames, tracebacks and tracing (traceback.walk_tb and walk_stack yield
    # the harness's frames without a frame attribute being named).
    "traceback": ("py-introspection", "walks the harness's frames (traceback.walk_stack, walk_tb)"),
    "pdb": ("py-introspection", "debugs the harness's frames"),
    "bdb": ("py-introspection", "debugs the harness's frames"),
    "trace": ("py-introspection", "traces the harness's code"),
    "tracemalloc": ("py-introspection", "traces the harness's allocations"),
    "cProfile": ("py-introspection", "profiles the harness's code"),
    "profile": ("py-introspection", "profiles the harness's code"),
    "resource": ("py-process", "changes the process's limits (setrlimit)"),
    # Streams and graphs by namespace (torch.cuda.streams.Stream is torch.cuda.Stream).
    "torch.cuda.streams": ("py-side-stream", "makes or switches streams: work the call's stream does not order"),
    "torch.cuda.graphs": ("py-side-stream", "captures graphs on a side stream"),
    "torch.cuda.jiterator": ("py-compiler", "compiles kernels at run time: the candidate may not run a compiler"),
    "torch.cuda.tunable": ("py-global-flag", "changes a process-wide setting (TunableOp)"),
    "tempfile": ("py-io", "writes files"),
    "triton": ("py-compiler", "compiles kernels at run time (Triton): the candidate may not run a compiler"),
    "torch._C": ("py-private-api", "reaches torch's internals (torch._C)"),
    "torch._dynamo": ("py-compiler", "compiles at run time (torch._dynamo)"),
    "torch._inductor": ("py-compiler", "compiles at run time (torch._inductor)"),
    "torch.utils._python_dispatch": ("py-tensor-subclass", "intercepts torch's dispatch"),
    "torch.overrides": ("py-tensor-subclass", "intercepts torch functions"),
    "torch.library": ("py-monkeypatch", "registers or overrides torch operators"),
    # Ways to the same ends under other names (a review by attack, 2026-12-07):
    # resolving a dotted string to any object (pkgutil.resolve_name("builtins:exec"),
    # pydoc.locate), running code strings (code, codeop, timeit, runpy, marshal),
    # os's native half (posix: files, descriptors, _exit), native calls, files.
    "pkgutil": ("py-dynamic-code", "resolves strings to any object (pkgutil.resolve_name)"),
    "pydoc": ("py-dynamic-code", "resolves strings to any object (pydoc.locate)"),
    "code": ("py-dynamic-code", "runs code built at run time"),
    "codeop": ("py-dynamic-code", "compiles code at run time"),
    "timeit": ("py-dynamic-code", "runs code strings (and times outside the harness)"),
    "runpy": ("py-dynamic-code", "runs modules or files as code"),
    "marshal": ("py-dynamic-code", "loads code objects"),
    "zipimport": ("py-dynamic-code", "imports code from archives"),
    "posix": ("py-io", "is os's native half: files, descriptors and processes past every rule on os"),
    "_posixsubprocess": ("py-process", "starts processes"),
    "_ctypes": ("py-native", "calls native code outside the build (ctypes)"),
    "faulthandler": ("py-introspection", "dumps the harness's frames and handles signals"),
    "linecache": ("py-io", "reads files"),
    "glob": ("py-io", "lists files"),
    "fileinput": ("py-io", "reads files"),
    "numpy.ctypeslib": ("py-native", "loads native libraries outside the build"),
    # A fourth review by attack (2026-12-07): torch's and the standard
    # library's own ways to run code strings, compile, resolve strings to
    # objects or start threads (torch.utils.benchmark.Timer(stmt=...) ran
    # `import ctypes` past every rule; logging.handlers.QueueListener ran
    # half a GEMM on a second core).
    "torch.utils.benchmark": ("py-dynamic-code", "runs code strings (Timer's stmt) and compiles C++"),
    "torch.export": ("py-compiler", "traces and compiles the model at run time (generated code it runs)"),
    "torch.compiler": ("py-compiler", "compiles at run time"),
    "torch.onnx": ("py-compiler", "traces and exports the model at run time"),
    "torch.testing": ("py-dynamic-code", "test machinery (code strings, patching)"),
    "torch.distributed": ("py-process", "starts processes, threads and network connections"),
    "torch.nn.parallel": ("py-thread", "starts threads (parallel_apply, DataParallel)"),
    "torch.utils.data": ("py-thread", "starts worker threads or processes (DataLoader, datapipes' prefetcher)"),
    "logging.handlers": ("py-thread", "starts threads (QueueListener) and opens files and sockets"),
    "logging.config": ("py-dynamic-code", "resolves strings to any object and calls it (dictConfig's '()'), "
                       "and listens on a socket"),
}

# Modules that `from PACKAGE import NAME` can bind (an `import` statement
# always binds a module): where one of them, or a name bound to one, stands
# as a value (a list's element, an argument, a default, a return value) the
# rules lose sight of what is reached through it (`T = [torch][0]`).
KNOWN_MODULES = {
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.modules", "torch.nn.parameter",
    "torch.cuda", "torch.utils", "torch.utils.cpp_extension", "torch.backends", "torch.autograd", "torch.fx",
    "torch.linalg", "torch.fft", "torch.special", "torch.sparse", "torch.library", "torch.jit", "torch.ops",
    "torch.distributed", "torch.testing", "torch.overrides", "torch.multiprocessing", "torch.amp",
    "os", "os.path", "sys", "math", "builtins", "types", "functools", "operator", "numpy", "np",
}

# Attributes whose use is a rule: dotted name (after alias resolution) -> rule, why.
ATTRIBUTE_RULES = {
    "sys.modules": ("py-introspection", "reaches every loaded module, the harness's included"),
    "operator.attrgetter": ("py-dynamic-code", "reaches attributes by computed names"),
    "torch.ops.load_library": ("py-native", "loads a native library outside the build (dlopen)"),
    "torch.classes.load_library": ("py-native", "loads a native library outside the build (dlopen)"),
    "operator.methodcaller": ("py-dynamic-code", "calls methods by computed names"),
    "sys._getframe": ("py-introspection", "walks the harness's frames"),
    "sys.settrace": ("py-introspection", "traces the harness's code"),
    "sys.setprofile": ("py-introspection", "profiles the harness's code"),
    "sys.exit": ("py-process", "ends the process"),
    "os.system": ("py-process", "starts processes"),
    "os.fork": ("py-process", "starts processes"),
    "os.kill": ("py-process", "signals processes"),
    "os.environ": ("py-io", "reads the environment"),
    "os.open": ("py-io", "opens files or descriptors"),
    "os.fdopen": ("py-io", "opens files or descriptors"),
    "os.read": ("py-io", "reads descriptors (the harness's too)"),
    "os.write": ("py-io", "writes descriptors (the harness's result channel too)"),
    "os.pread": ("py-io", "reads descriptors"),
    "os.pwrite": ("py-io", "writes descriptors"),
    "os.close": ("py-io", "closes descriptors (the harness's too)"),
    "os.dup": ("py-io", "copies descriptors (the harness's too)"),
    "os.dup2": ("py-io", "copies descriptors (the harness's too)"),
    "os._exit": ("py-process", "ends the process"),
    "os.abort": ("py-process", "ends the process"),
    "io.open": ("py-io", "reads or writes files"),
    "io.FileIO": ("py-io", "reads or writes files"),
    "torch.set_num_threads": ("py-global-flag", "changes the CPU threads of the whole process (the baselines' too)"),
    "torch.set_num_interop_threads": ("py-global-flag", "changes the CPU threads of the whole process"),
    "os.getenv": ("py-io", "reads the environment"),
    "os.listdir": ("py-io", "lists files"),
    "os.scandir": ("py-io", "lists files"),
    "os.walk": ("py-io", "lists files"),
    "os.killpg": ("py-process", "signals processes"),
    "os.popen": ("py-process", "starts processes"),
    "os.posix_spawn": ("py-process", "starts processes"),
    "os.posix_spawnp": ("py-process", "starts processes"),
    "os.execv": ("py-process", "replaces the process"),
    "os.execve": ("py-process", "replaces the process"),
    "os.spawnv": ("py-process", "starts processes"),
    "io.open_code": ("py-io", "reads files"),
    "codecs.open": ("py-io", "reads or writes files"),
    "sys._current_frames": ("py-introspection", "walks every thread's frames, the harness's included"),
    "typing.get_type_hints": ("py-dynamic-code", "evaluates strings as code"),
    "string.Formatter": ("py-dynamic-code", "reaches attributes by computed names (get_field)"),
    "types.FunctionType": ("py-dynamic-code", "makes functions from code objects"),
    "types.CodeType": ("py-dynamic-code", "makes code objects"),
    "torch.from_file": ("py-io", "reads files"),
    "numpy.fromfile": ("py-io", "reads files"),
    "numpy.load": ("py-io", "reads files"),
    "numpy.memmap": ("py-io", "maps files"),
    "numpy.loadtxt": ("py-io", "reads files"),
    "numpy.genfromtxt": ("py-io", "reads files"),
    "torch.compile": ("py-compiler", "compiles at run time: the candidate may not run a compiler"),
    "torch.jit": ("py-compiler", "compiles at run time (TorchScript)"),
    "torch.cuda.Stream": ("py-side-stream", "makes its own stream: work the call's stream does not order"),
    "torch.cuda.ExternalStream": ("py-side-stream", "uses a stream of its own choosing"),
    "torch.cuda.stream": ("py-side-stream", "runs work on another stream"),
    "torch.cuda.set_stream": ("py-side-stream", "switches the current stream"),
    "torch.cuda.Event": ("py-timer", "makes CUDA events: timing is the harness's"),
    "torch.cuda.set_sync_debug_mode": ("py-global-flag", "changes a process-wide setting"),
    "torch.set_float32_matmul_precision": ("py-global-flag", "changes matmul precision for the whole process (TF32)"),
    "torch.set_flush_denormal": ("py-global-flag", "changes a process-wide floating-point setting"),
    "torch.use_deterministic_algorithms": ("py-global-flag", "changes a process-wide setting"),
    "torch.set_default_dtype": ("py-global-flag", "changes a process-wide setting"),
    "torch.set_default_device": ("py-global-flag", "changes a process-wide setting"),
    "torch.backends": ("py-global-flag", "changes or reads process-wide backend settings (TF32, cudnn.benchmark)"),
    "torch.Tensor._make_subclass": ("py-tensor-subclass", "makes a tensor subclass"),
    "torch.Tensor._make_wrapper_subclass": ("py-tensor-subclass", "makes a tensor subclass"),
    "torch.utils.cpp_extension.load": ("py-compiler", "builds an extension from files at run time: use load_inline, "
                                       "whose sources the build stage reads and builds"),
    "torch.utils.cpp_extension.CppExtension": ("py-compiler", "builds extensions: the candidate may not run a compiler"),
    "torch.utils.cpp_extension.CUDAExtension": ("py-compiler", "builds extensions: the candidate may not run a compiler"),
    "torch.utils.cpp_extension.BuildExtension": ("py-compiler", "builds extensions: the candidate may not run a compiler"),
    "torch.load": ("py-dynamic-code", "unpickles objects (weights_only or not, a file or a buffer): a pickle "
                   "runs any code it names"),
    "torch.save": ("py-io", "writes files"),
    "torch.cuda.memory": ("py-allocator", "reaches the caching allocator (stale memory of other calls)"),
    "torch.cuda.caching_allocator_alloc": ("py-allocator", "allocates outside tensors"),
    "torch.cuda.set_per_process_memory_fraction": ("py-allocator", "changes the caching allocator's limit"),
    "torch.cuda.cudart": ("py-native", "calls the CUDA runtime directly"),
    "numpy.save": ("py-io", "writes files"),
    "numpy.savez": ("py-io", "writes files"),
    "numpy.savez_compressed": ("py-io", "writes files"),
    "numpy.savetxt": ("py-io", "writes files"),
    "numpy.fromregex": ("py-io", "reads files"),
    "numpy.ndarray.tofile": ("py-io", "writes files"),
    "numpy.DataSource": ("py-io", "reads files or URLs"),
    "types.new_class": ("py-call-override", "makes a class at run time (its metaclass and namespace are any)"),
    "types.prepare_class": ("py-call-override", "prepares a class at run time"),
    "abc.ABCMeta": ("py-call-override", "is a metaclass: called, it makes a class at run time"),
    "enum.EnumMeta": ("py-call-override", "is a metaclass: called, it makes a class at run time"),
    "enum.EnumType": ("py-call-override", "is a metaclass: called, it makes a class at run time"),
    # (a fourth review by attack, 2026-12-07)
    "typing.ForwardRef": ("py-dynamic-code", "compiles a string, and its _evaluate runs it as code"),
    "numpy.lib.stride_tricks.as_strided": ("py-native", "makes a view of raw memory without bounds (the "
                                           "process's memory around an array, the harness's included)"),
    "torch.cuda.graph": ("py-side-stream", "captures on a side stream"),
    "torch.cuda.CUDAGraph": ("py-side-stream", "captures on a side stream"),
}

BUILTIN_RULES = {
    "eval": ("py-dynamic-code", "runs code built at run time"),
    "exec": ("py-dynamic-code", "runs code built at run time"),
    "compile": ("py-dynamic-code", "compiles code at run time"),
    "__import__": ("py-dynamic-code", "imports modules by computed names"),
    "globals": ("py-introspection", "reaches module globals by name"),
    "vars": ("py-introspection", "reaches objects' namespaces by name"),
    "open": ("py-io", "reads or writes files"),
    "setattr": ("py-monkeypatch", "sets attributes by computed names"),
    "delattr": ("py-monkeypatch", "deletes attributes by computed names"),
    "breakpoint": ("py-process", "starts a debugger"),
    "input": ("py-io", "reads standard input"),
    "__builtins__": ("py-dynamic-code", "reaches the interpreter's builtins (exec, __import__) by name"),
    "__loader__": ("py-dynamic-code", "reaches the import machinery"),
    "__spec__": ("py-dynamic-code", "reaches the import machinery"),
}

# Modules re-exported as attributes of other modules (torch.ctypes,
# torch.sys, torch.os, torch.utils.data.dataloader.threading): a chain
# rooted at a module is judged at every one of its segments, not only at its
# start. (torch.signal is torch's own signal-processing namespace.)
SEGMENT_EXEMPT = {"torch.signal"}

# Attribute names judged wherever they stand in a chain rooted at a module,
# whatever namespace leads to them (a review by attack, 2026-12-07:
# torch._ops.ops.load_library, torch.UntypedStorage.from_file,
# torch.accelerator.set_stream, torch.Stream): name -> (rule, why, only
# under torch).
SEGMENT_RULES = {
    "load_library": ("py-native", "loads a native library outside the build (dlopen)", False),
    "from_file": ("py-io", "maps or reads files", False),
    "Stream": ("py-side-stream", "makes a stream: work the call's stream does not order", True),
    "ExternalStream": ("py-side-stream", "uses a stream of its own choosing", True),
    "StreamContext": ("py-side-stream", "runs work on another stream", True),
    "stream": ("py-side-stream", "runs work on another stream", True),
    "set_stream": ("py-side-stream", "switches the current stream", True),
    "streams": ("py-side-stream", "makes or switches streams", True),
    "graphs": ("py-side-stream", "captures graphs on a side stream", True),
    "CUDAGraph": ("py-side-stream", "captures on a side stream", True),
    "make_graphed_callables": ("py-side-stream", "captures on a side stream", True),
    "graph_pool_handle": ("py-side-stream", "captures on a side stream", True),
    "Event": ("py-timer", "makes device events: timing (and ordering across streams) is the harness's", True),
}

# A module's private half (any segment starting with `_` that is not a
# `__dunder__`: _pickle, _io, _operator, _signal, _socket, _imp,
# torch._utils, torch._ops) is the same power as its public one under a
# name no rule lists, so every one is refused (py-private-api), but these
# (dotted, from the module): torch's tuple helpers that convolution modules
# use (`from torch.nn.modules.utils import _pair`), pure functions of their
# argument. `__future__` and `torch.__version__` need no entry: dunders are
# not private here (ESCAPE_ATTRIBUTES judges the dangerous ones on their own).
PRIVATE_ALLOWED = {f"torch.nn.modules.utils.{n}" for n in ("_single", "_pair", "_triple", "_quadruple", "_ntuple")}

# sys and os are judged by what they allow (everything else in them reaches
# frames, modules, import hooks, audit hooks, monitoring, files, descriptors,
# processes or the environment: sys.meta_path, sys.addaudithook,
# sys.monitoring, sys.exc_info, os.truncate, os.sched_setaffinity, ...).
SYS_ALLOWED = {"version", "version_info", "hexversion", "platform", "byteorder", "maxsize", "maxunicode", "float_info",
               "int_info", "float_repr_style", "implementation", "stdout", "stderr", "getsizeof", "getrecursionlimit",
               "getdefaultencoding", "flags", "api_version", "thread_info"}
OS_ALLOWED = {"path", "sep", "altsep", "extsep", "pathsep", "linesep", "curdir", "pardir", "devnull", "name",
              "cpu_count", "fspath", "fsencode", "fsdecode", "PathLike", "getpid", "sched_getaffinity"}


# What a solution may import (a fourth review by attack, 2026-12-07): the
# standard library's plain modules, torch and numpy. Any other module of the
# standard library or of the installed environment is refused (py-module):
# the environment holds packages that run strings as code (jinja2, sympy's
# lambdify, pandas.eval), start threads (logging.handlers) or processes
# (ray, multiprocess), and no list of their names could be complete. A
# module found nowhere is the solution's own built extension (`import
# cuda_extension`): nothing else is on the worker's sys.path.
IMPORT_ALLOWED = {"torch", "numpy", "typing_extensions", "math", "cmath", "functools", "itertools", "operator",
                  "collections", "typing", "dataclasses", "enum", "abc", "numbers", "warnings", "os", "sys",
                  "time", "random", "copy", "re", "struct", "array", "bisect", "heapq", "statistics", "fractions",
                  "decimal", "contextlib", "types", "__future__", "textwrap", "string", "hashlib", "json",
                  "weakref", "io", "logging", "datetime", "errno", "keyword", "pprint"}
# torch.utils by what it allows (torch.utils.benchmark runs code strings,
# torch.utils.data starts threads, ...).
TORCH_UTILS_ALLOWED = {"cpp_extension", "dlpack", "checkpoint", "hooks"}


def module_known(top):
    """Whether a top-level module name is the standard library's or an
    installed package (found without running it), rather than the
    solution's own extension."""
    if top in getattr(sys, "stdlib_module_names", ()) or top in sys.builtin_module_names:
        return True
    try:
        import importlib.util
        return importlib.util.find_spec(top) is not None
    except Exception:  # noqa: BLE001 - a name that cannot be looked up is not an installed one
        return False


def is_private(segment):
    return segment.startswith("_") and not (segment.startswith("__") and segment.endswith("__") and len(segment) > 4)

# Attributes that lead from any object to code, frames and namespaces it
# was not handed: the classic ways out of a Python jail
# (().__class__.__base__.__subclasses__() to any loaded class, a
# function's __globals__ to its module, a frame's f_back to its caller).
ESCAPE_ATTRIBUTES = {"__subclasses__", "__globals__", "__code__", "__closure__", "__mro__", "__bases__", "__base__",
                     "__builtins__", "f_globals", "f_locals", "f_builtins", "f_back", "tb_frame", "gi_frame",
                     "cr_frame", "ag_frame",
                     # a builtin's __self__ is the builtins module (len.__self__.__import__);
                     # any object's or module's __dict__ is its namespace, whatever is in it
                     "__self__", "__dict__", "__import__", "__loader__", "__spec__",
                     # attribute lookup by a string, past every rule on names
                     "__getattribute__", "__getattr__",
                     # an exception's traceback leads to frames (tb_frame, traceback.walk_tb)
                     "__traceback__"}

# Special methods that change what calling ModelNew, or reading its
# attributes or results, does.
MODEL_OVERRIDES = {"__call__", "__getattribute__", "__getattr__", "__new__", "__init_subclass__", "__class_getitem__",
                   "_call_impl", "_wrapped_call_impl", "__setattr__", "__del__"}
# Special methods that change what any class does where it is made or
# subclassed (Base.__init_subclass__ installs ModelNew.__call__; a class
# attribute's __set_name__ gets ModelNew itself; __new__ returns any object):
# refused on every class of the file, not only ModelNew's.
CLASS_OVERRIDES = {"__init_subclass__", "__class_getitem__", "__set_name__", "__new__", "__prepare__",
                   "__instancecheck__", "__subclasscheck__", "__mro_entries__"}
# What an attribute assignment (X.NAME = ..., any X), setattr or
# object.__setattr__ may not name: what the harness's model(*inputs) runs.
CALL_ATTRIBUTES = MODEL_OVERRIDES | CLASS_OVERRIDES | {"forward", "__class__"}
# Metaclasses by name: a base made by calling one is a class with a metaclass.
METACLASSES = {"type", "abc.ABCMeta", "enum.EnumMeta", "enum.EnumType"}
HOOKS = {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
         "register_module_forward_hook", "register_module_forward_pre_hook"}

# Tensor methods forward may call under --torch-compute error (the paper's
# workspace rules): shapes, views, allocation and hand-over, no arithmetic.
PAPER_ALLOWED = {"size", "dim", "numel", "stride", "shape", "dtype", "device", "is_contiguous", "contiguous",
                 "view", "reshape", "flatten", "unsqueeze", "squeeze", "permute", "transpose", "t", "expand",
                 "data_ptr", "element_size", "to", "cuda", "cpu", "float", "half", "bfloat16", "empty_like",
                 "new_empty", "detach", "item", "tolist", "numpy", "storage_offset", "get_device", "is_cuda",
                 "narrow", "split", "chunk", "unbind", "as_strided", "view_as", "reshape_as", "expand_as",
                 "requires_grad_", "type", "empty", "empty_strided", "zeros_like", "zeros", "new_zeros",
                 "ones", "ones_like", "full", "full_like", "tensor", "as_tensor", "from_numpy", "stack", "cat",
                 "arange", "is_tensor", "no_grad", "inference_mode", "Size", "Generator", "device"}


def compute_names():
    """torch's compute functions and Tensor methods (everything callable on
    them that is not in PAPER_ALLOWED), read from the installed torch."""
    try:
        import torch
        names = {n for n in dir(torch.Tensor) if not n.startswith("_")}
        names |= {n for n in dir(torch) if not n.startswith("_") and callable(getattr(torch, n, None))}
        import torch.nn.functional as F
        names |= {n for n in dir(F) if not n.startswith("_")}
    except Exception:  # noqa: BLE001 - no torch: a fixed core list
        names = {"matmul", "mm", "bmm", "addmm", "conv2d", "relu", "softmax", "sum", "mean", "exp", "add", "mul",
                 "linear", "einsum", "tanh", "sigmoid", "gelu", "max", "min", "sub", "div", "pow", "sqrt"}
    return names - PAPER_ALLOWED


# Namespaces whose every callable is compute under --torch-compute, whether
# or not its name is one of torch's top-level ones (torch.linalg.multi_dot,
# torch.ops.aten.addmm.default, torch.special.*, F.*).
COMPUTE_NAMESPACES = ("torch.ops.", "torch.linalg.", "torch.special.", "torch.fft.", "torch.nn.functional.",
                      "torch.nn.init.", "torch.sparse.", "torch.masked.", "torch.func.", "torch.autograd.functional.",
                      "torch.distributions.", "torch.signal.", "torch.nested.", "torch.ao.", "torch.quantization.",
                      "numpy.linalg.", "numpy.fft.")
# torch.nn classes that hold tensors, not computations.
NOT_MODULE_CLASSES = {"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "ParameterList",
                      "ParameterDict"}
# Methods of a container (or module) that hand out what it holds: a torch
# module or compute function reached through one is called unseen.
CONTAINER_METHODS = {"get", "values", "items", "pop", "popitem", "setdefault", "copy", "__getitem__", "__iter__",
                     "children", "modules", "named_children", "named_modules", "get_submodule", "forward",
                     "__call__", "_call_impl", "_wrapped_call_impl", "index", "keys", "extend", "append", "insert"}
# nn.Module's own ways to its submodules, by name, from forward.
MODULE_TRAVERSAL = {"children", "modules", "named_children", "named_modules", "get_submodule", "_modules"}


def torch_module_class(name):
    """Whether a dotted name is a torch.nn module class (calling an
    instance runs torch's forward): read from the installed torch."""
    if not name or not name.startswith("torch.nn.") or name.split(".")[-1] in NOT_MODULE_CLASSES:
        return False
    try:
        import torch
        obj = torch
        for part in name.split(".")[1:]:
            obj = getattr(obj, part)
        return isinstance(obj, type) and issubclass(obj, torch.nn.Module)
    except Exception:  # noqa: BLE001 - no torch, or not an attribute of it: by its spelling
        return name.split(".")[-1][:1].isupper()


# operator's functions that are no arithmetic (operator.matmul is `@`).
OPERATOR_NOT_COMPUTE = {"index", "itemgetter", "getitem", "length_hint", "is_", "is_not", "truth", "not_", "contains"}


class Checker(ast.NodeVisitor):
    def __init__(self, path, lines, torch_compute):
        self.path, self.lines, self.torch_compute = path, lines, torch_compute
        self.findings = []
        self.aliases = {}  # local name -> dotted module or attribute it is bound to
        self.modules = set()  # dotted names that are modules (imports, KNOWN_MODULES)
        self.torch_submodules = {}  # the class being read: self.NAME -> the torch.nn class __init__ made it
        self.model_classes = set()
        self.class_bases, self.metaclasses, self.model_family, self.module_classes = {}, set(), {"ModelNew"}, set()
        self.torch_module_classes, self.tainted_globals = set(), {}
        # Under --torch-compute, what the file's own objects hold (a fourth
        # review by attack, 2026-12-07: `OPS.f(...)` where `class Ops` bound
        # self.f = torch.addmm, `self.h.run(x)` where Holder(nn.Linear(...))
        # kept the module from its parameter): class -> NAME -> what it runs;
        # function -> its parameters and locals handed torch compute;
        # self.X / module-level NAME -> the file's class it is an instance of.
        self.class_nodes, self.class_holdings, self.fed, self.file_functions = {}, {}, {}, set()
        self.file_attributes = set()
        self.instances, self.global_instances, self.scope_taint = {}, {}, []
        self.in_forward = False
        self.compute = compute_names() if torch_compute != "off" else set()

    def add(self, node, rule, message, severity="error"):
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].rstrip() if 0 < line <= len(self.lines) else ""
        self.findings.append({"rule": rule, "severity": severity, "file": self.path, "line": line,
                              "column": getattr(node, "col_offset", -1) + 1, "message": message,
                              "source_line": text})

    @staticmethod
    def chain(node):
        """(the Name an attribute chain starts at, its attributes in order), or (None, ...)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return (node if isinstance(node, ast.Name) else None), list(reversed(parts))

    def dotted(self, node):
        """The dotted name an expression stands for, aliases resolved; None if it is not one."""
        root, parts = self.chain(node)
        if root is None:
            return None
        return ".".join([self.aliases.get(root.id, root.id)] + parts)

    def check_name(self, node, name):
        if name is None:
            return
        found = self.rule_of(name)
        if found:
            rule, why = found
            self.add(node, rule, f"`{name}` {why}")
        return found

    def judge_import(self, node, module):
        """An import of a module the rules do not know (IMPORT_ALLOWED): the
        standard library's or the environment's other modules."""
        top = module.split(".")[0]
        if not top or top in IMPORT_ALLOWED or not module_known(top):
            return
        self.add(node, "py-module", f"`{module}` is not a module a solution may import (the standard library's plain "
                 "modules, torch and numpy): the environment's other modules run strings as code, start threads or "
                 "processes, past rules that cannot list them all")

    def rule_of(self, name):
        """The (rule, why) a dotted name (aliases resolved) falls under, or None."""
        parts = name.split(".")
        # Where the chain starts at a module (an import, or a name bound to
        # one), every suffix of it is a name too: torch.ctypes is ctypes.
        rooted = parts[0] in self.module_roots()
        starts = range(len(parts)) if rooted else range(1)
        for i in starts:
            if i and ".".join(parts[:i + 1]) in SEGMENT_EXEMPT:
                break
            tail = ".".join(parts[i:])
            for table in (ATTRIBUTE_RULES, MODULE_RULES):
                for key, (rule, why) in table.items():
                    if tail == key or tail.startswith(key + "."):
                        return rule, why
        if not rooted:
            return None
        # By what each segment is, whatever spelling led to it.
        for i, seg in enumerate(parts):
            if i and ".".join(parts[:i + 1]) in SEGMENT_EXEMPT:
                break
            if i and seg in SEGMENT_RULES:
                rule, why, torch_only = SEGMENT_RULES[seg]
                if parts[0] == "torch" or not torch_only:
                    return rule, why
            if is_private(seg) and parts[0] and ".".join(parts[:i + 1]) not in PRIVATE_ALLOWED:
                # (not the solution's own modules: `from ._util import f`)
                return "py-private-api", (f"reaches a private module or attribute (`{seg}`): a module's private "
                                          "half is its public one's power under names no rule lists")
            if seg == "sys" and i + 1 < len(parts) and parts[i + 1] not in SYS_ALLOWED:
                return "py-introspection", ("reaches the interpreter's state (frames, modules, import and audit "
                                            "hooks, monitoring): only sys's plain facts are allowed")
            if (seg == "utils" and i == 1 and parts[0] == "torch" and i + 1 < len(parts)
                    and parts[i + 1] not in TORCH_UTILS_ALLOWED and not is_private(parts[i + 1])):
                return "py-module", (f"reaches `torch.utils.{parts[i + 1]}`: only torch.utils."
                                     f"{{{', '.join(sorted(TORCH_UTILS_ALLOWED))}}} are allowed (torch.utils.benchmark "
                                     "runs code strings, torch.utils.data starts threads)")
            if seg == "os" and i + 1 < len(parts) and parts[i + 1] not in OS_ALLOWED:
                return "py-io", ("reaches files, descriptors, processes or the environment: only os.path, "
                                 "os.cpu_count and os's constants are allowed")
        return None

    def annotate(self, tree):
        """Gives every node its parent (module values are judged by where they stand)."""
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                child.kb_parent = parent

    def prepare(self, tree):
        """What the classes of the file are, before any is read: name ->
        bases (dotted, imports resolved), the metaclasses (classes deriving
        from type), ModelNew's family (itself, its subclasses and its bases
        made in the file: a base's __call__ is ModelNew's) and the classes
        deriving from torch.nn.Module."""
        imports = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    imports[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    imports[a.asname or a.name] = f"{node.module or ''}.{a.name}" if node.module else a.name
        renames = {}  # Base2 = Base (module level)
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        renames[t.id] = node.value.id

        def name_of(expr):
            root, parts = self.chain(expr)
            if root is None:
                return ""
            head = root.id
            seen = set()
            while head in renames and head not in seen:
                seen.add(head)
                head = renames[head]
            return ".".join([imports.get(head, head)] + parts)

        self.class_bases = {}
        self.file_functions = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        # Attribute names the file defines: assigned as X.NAME, or a class's method or attribute.
        self.file_attributes = {n.attr for n in ast.walk(tree)
                                if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del))}
        for c in ast.walk(tree):
            if isinstance(c, ast.ClassDef):
                for item in c.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        self.file_attributes.add(item.name)
                    elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                        for t in (item.targets if isinstance(item, ast.Assign) else [item.target]):
                            self.file_attributes.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.class_bases.setdefault(node.name, []).extend(name_of(b) for b in node.bases)
        self.metaclasses = set()
        changed = True
        while changed:
            changed = False
            for name, bases in self.class_bases.items():
                if name not in self.metaclasses and any(b in METACLASSES or b in self.metaclasses for b in bases):
                    self.metaclasses.add(name)
                    changed = True
        family = {"ModelNew"}
        changed = True
        while changed:
            changed = False
            for name, bases in self.class_bases.items():
                if name not in family and any(b in family for b in bases):  # subclasses
                    family.add(name)
                    changed = True
                if name in family:
                    for b in bases:  # bases made in the file
                        if b in self.class_bases and b not in family:
                            family.add(b)
                            changed = True
        self.model_family = family
        modules = set()
        changed = True
        while changed:
            changed = False
            for name, bases in self.class_bases.items():
                if name not in modules and any(b.startswith("torch.nn.") or b in modules for b in bases):
                    modules.add(name)
                    changed = True
        self.module_classes = modules
        self.seed_aliases(tree)
        if self.torch_compute != "off":
            # Classes deriving from a torch module other than Module itself: their forward is torch's.
            changed = True
            while changed:
                changed = False
                for name, bases in self.class_bases.items():
                    if name not in self.torch_module_classes and any(
                            (b != "torch.nn.Module" and torch_module_class(b)) or b in self.torch_module_classes
                            for b in bases):
                        self.torch_module_classes.add(name)
                        changed = True
            self.class_nodes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
            for _ in range(3):  # holdings, parameters fed torch compute and module-level names feed each other
                self.tainted_globals = self.module_taint(tree)
                self.fed = self.fed_params(tree)
                self.class_holdings = {name: self.submodules_of(node) for name, node in self.class_nodes.items()}
            self.global_instances = {t.id: c for t, c in self.instance_bindings(tree.body, lambda t: t.id
                                                                               if isinstance(t, ast.Name) else None)}
        # The harness takes whatever the name ModelNew is bound to last: one class statement, nothing else.
        classes = 0
        for node in ast.walk(tree):
            bound = None
            if isinstance(node, ast.Name) and node.id == "ModelNew" and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound = node
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "ModelNew":
                bound = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    (a.asname or a.name.split(".")[0]) == "ModelNew" for a in node.names):
                bound = node
            elif isinstance(node, ast.ClassDef) and node.name == "ModelNew":
                classes += 1
                bound = node if classes > 1 else None
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == "ModelNew":
                bound = node
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and "ModelNew" in node.names:
                bound = node
            if bound is not None:
                self.add(bound, "py-call-override", "binds the name ModelNew other than by its one class statement: "
                         "the harness constructs whatever it is bound to last")

    def seed_aliases(self, tree):
        """The names imports and plain assignments bind, before the file is
        read in order (what a module-level name holds is judged wherever it
        is used, above its binding too)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = ("." * node.level) + (node.module or "")
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
        for _ in range(3):
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
                    value = self.dotted(node.value)
                    if value and value.split(".")[0] in self.module_roots():
                        for t in node.targets:
                            if isinstance(t, ast.Name):
                                self.aliases[t.id] = value

    def is_module(self, node):
        """Whether a Name or attribute chain stands for a module object."""
        root, _ = self.chain(node)
        if root is None or root.id not in self.aliases:  # a local of that name is not a module
            return False
        name = self.dotted(node)
        return name in self.modules or name in KNOWN_MODULES

    def judge_module_value(self, node):
        """A module may be the root of an attribute chain, or bound to a
        plain name (an alias the rules follow); anywhere else it is a value
        the rules cannot follow (`T = [torch][0]`, `f(torch)`, `getattr(torch, n)`)."""
        if not self.is_module(node):
            return
        parent = getattr(node, "kb_parent", None)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return
        # (Not in a class body: `class A: t = torch` is reached as A.t, which no alias follows.)
        if (isinstance(parent, ast.Assign) and parent.value is node and all(isinstance(t, ast.Name) for t in parent.targets)
                and not isinstance(getattr(parent, "kb_parent", None), ast.ClassDef)):
            return
        # hasattr(torch, "channels_last_3d"): a feature test, only a bool comes back.
        if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "hasattr"
                and "hasattr" not in self.aliases and len(parent.args) == 2 and parent.args[0] is node
                and isinstance(parent.args[1], ast.Constant) and isinstance(parent.args[1].value, str)):
            return
        self.add(node, "py-module-value", f"`{self.dotted(node)}` is a module used as a value: the rules cannot follow "
                 "what is reached through it (use its attributes, or bind it with import)")

    def module_roots(self):
        """The names that stand for modules: imported ones and their roots."""
        return {v.split(".")[0] for v in self.aliases.values()} | set(self.aliases)

    # --- imports bind names ---------------------------------------------------
    def visit_Import(self, node):
        for a in node.names:
            self.aliases[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            self.modules.add(a.name)
            self.modules.update(".".join(a.name.split(".")[:i + 1]) for i in range(a.name.count(".")))
            if not self.check_name(node, a.name):
                self.judge_import(node, a.name)

    def visit_ImportFrom(self, node):
        base = ("." * node.level) + (node.module or "")
        if any(a.name == "*" for a in node.names) and not node.level:
            self.add(node, "py-dynamic-code", f"`from {base} import *` binds names the rules cannot see "
                     "(`from os import *` makes `system` a plain name): import the names you use")
        for a in node.names:
            full = f"{base}.{a.name}" if base else a.name
            self.aliases[a.asname or a.name] = full
            if not self.check_name(node, full if a.name != "*" else base) and not node.level:
                self.judge_import(node, base)

    # --- uses -------------------------------------------------------------------
    def visit_Attribute(self, node):
        name = self.dotted(node)
        whole = name is not None and isinstance(node.ctx, ast.Load)
        # An escape attribute anywhere in a chain judged whole (its inner
        # nodes are not visited: fn.__globals__.get), else this node's own.
        n = node
        while isinstance(n, ast.Attribute):
            if n.attr in ESCAPE_ATTRIBUTES:
                self.add(node, "py-introspection", f"`.{n.attr}` reaches objects the solution was not handed "
                         "(classes, module globals, frames: the harness's too)")
                break
            n = n.value if whole else None
        self.judge_private_attribute(node)
        if node.attr in self.SETATTR_LIKE:
            parent = getattr(node, "kb_parent", None)
            if not (isinstance(parent, ast.Call) and parent.func is node):
                self.add(node, "py-monkeypatch", f"`.{node.attr}` passed around as a value: its calls are not judged")
        if whole:
            self.check_name(node, name)
            self.judge_module_value(node)
            self.judge_compute_value(node, name)
            n = node  # self.seq, in self.seq.get / self.seq.values: the attribute at the chain's root
            while isinstance(n, ast.Attribute) and not (isinstance(n.value, ast.Name)):
                n = n.value
            if isinstance(n, ast.Attribute):
                self.judge_held_value(n)
            root, _ = self.chain(node)
            if root is not None:
                self.judge_held_value(root)
            return  # the whole chain is judged once
        self.judge_held_value(node)
        self.generic_visit(node)

    def judge_private_attribute(self, node):
        """A private attribute (`._evaluate`) of an object that is not the
        file's own: `typing.ForwardRef(s)._evaluate(...)` ran `s` as code, and
        no list of such methods could be complete. Allowed: a name the file
        itself defines as an attribute (`self._cache = ...`, a method
        `_launch`), and any on `self`, `cls`, `super()`, a class or function
        of the file; a chain rooted at a module is judged as a name
        (py-private-api there)."""
        if not is_private(node.attr) or node.attr in self.file_attributes:
            return
        v = node.value
        if isinstance(v, ast.Name) and (v.id in ("self", "cls") or v.id in self.class_bases
                                        or v.id in self.file_functions) and v.id not in self.aliases:
            return
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
            return
        root, _ = self.chain(node)
        if root is not None and root.id in self.module_roots():
            return  # judged whole by rule_of
        what = ast.get_source_segment("\n".join(self.lines), node) or f"....{node.attr}"
        self.add(node, "py-private-api", f"`{what}` reaches a private attribute of an object that is not the file's "
                 "own (typing.ForwardRef's _evaluate runs a string as code): private halves hold powers no rule lists")

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.judge_module_value(node)
            if node.id not in self.aliases:
                self.judge_held_value(node)
            parent = getattr(node, "kb_parent", None)
            if (node.id == "getattr" and "getattr" not in self.aliases
                    and not (isinstance(parent, ast.Call) and parent.func is node)):
                self.add(node, "py-dynamic-code", "getattr passed around as a value: its calls are not judged")
            if node.id in self.aliases and self.aliases[node.id] != node.id:
                self.check_name(node, self.aliases[node.id])
                self.judge_compute_value(node, self.aliases[node.id])
            elif node.id in BUILTIN_RULES and node.id not in self.aliases:
                rule, why = BUILTIN_RULES[node.id]
                self.add(node, rule, f"`{node.id}` {why}")

    def assign_target(self, target, node):
        """An assignment to an attribute of a module (or of a class it
        defines) changes the harness's world too: a monkeypatch."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.assign_target(t, node)
            return
        if isinstance(target, ast.Attribute):
            name = self.dotted(target)
            root = name.split(".")[0] if name else None
            bound = root in {v.split(".")[0] for v in self.aliases.values()} or root in ("torch", "sys", "os")
            if name and bound:
                rule = "py-global-flag" if name.startswith("torch.backends") else "py-monkeypatch"
                self.add(node, rule, f"assigns `{name}`: changes a module the harness also uses")
                return  # the chain is judged once
            if target.attr in CALL_ATTRIBUTES:  # any object's, any class's: self.forward, cls.__call__, X.__class__
                what = ast.get_source_segment("\n".join(self.lines), target) or f"....{target.attr}"
                self.add(node, "py-call-override", f"assigns `{what}`: what the harness's call of the model "
                         "(or of a module it runs) reaches must be the class's own forward")
            elif isinstance(target.value, ast.Name) and target.value.id in self.model_classes:
                self.add(node, "py-call-override", f"assigns {target.value.id}.{target.attr} after the class is made")
            self.visit(target.value)
        elif isinstance(target, ast.Subscript):
            self.visit(target)

    def visit_Assign(self, node):
        for t in node.targets:
            self.assign_target(t, node)
        self.visit(node.value)
        # `T = torch`, `addmm = torch.addmm`: the name stands for what it is
        # bound to, as an import's alias does (flow-insensitive: a name once
        # bound to a module's attribute is judged as that everywhere).
        value = self.dotted(node.value) if isinstance(node.value, (ast.Name, ast.Attribute)) else None
        if value and value.split(".")[0] in self.module_roots():
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.aliases[t.id] = value

    def visit_For(self, node):  # `for X.forward in [f]` binds as an assignment does
        self.assign_target(node.target, node)
        for part in [node.iter] + node.body + node.orelse:
            self.visit(part)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node):
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self.assign_target(node.optional_vars, node.optional_vars)

    def visit_comprehension(self, node):
        self.assign_target(node.target, node.target)
        self.visit(node.iter)
        for cond in node.ifs:
            self.visit(cond)

    def visit_AugAssign(self, node):
        self.assign_target(node.target, node)
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        self.assign_target(node.target, node)
        if node.value:
            self.visit(node.value)

    def visit_Delete(self, node):
        for t in node.targets:
            self.assign_target(t, node)

    def visit_Global(self, node):
        self.add(node, "py-mutable-global", "a function rebinds module state (`global`): state kept across calls",
                 "warning")

    def visit_ClassDef(self, node):
        bases = [self.dotted(b) or "" for b in node.bases]
        for b in bases:
            if b == "torch.Tensor" or b.endswith(".Tensor") or b == "Tensor":
                self.add(node, "py-tensor-subclass", f"class {node.name} subclasses torch.Tensor: outputs must be plain tensors")
        for kw in node.keywords:
            if kw.arg == "metaclass":
                self.add(node, "py-call-override", f"class {node.name} has a metaclass: what constructing it (the "
                         "harness's ModelNew(...)) returns is the metaclass's choice")
        if node.name in self.metaclasses:
            self.add(node, "py-call-override", f"class {node.name} is a metaclass (derives from type): a class made by "
                     "it, or deriving from one that is, is constructed as it chooses (the harness's ModelNew(...))")
        for b in node.bases:
            if not isinstance(b, (ast.Name, ast.Attribute)):
                self.add(b, "py-call-override", f"a base of class {node.name} is made at run time (not a class named "
                         "in the file or an import): its metaclass decides what constructing it returns")
        is_model = node.name == "ModelNew" or any(b.split(".")[-1] in self.model_classes for b in bases)
        if is_model:
            self.model_classes.add(node.name)
        # ModelNew, its subclasses and bases, and any torch.nn.Module of the
        # file: what the harness calls, or what a module it calls runs.
        guarded = node.name in self.model_family or node.name in self.module_classes or is_model
        if node.name in self.model_family and node.decorator_list:
            self.add(node, "py-call-override", f"class {node.name} is decorated: the name may be bound to whatever "
                     "the decorator returns, not the class")
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if item.name in ("__torch_function__", "__torch_dispatch__"):
                    self.add(item, "py-tensor-subclass", f"{node.name}.{item.name} intercepts torch's calls")
                if item.name in CLASS_OVERRIDES:
                    self.add(item, "py-call-override", f"{node.name}.{item.name} changes what making or subclassing "
                             "a class does (ModelNew's too, where it derives from it)")
                elif guarded and item.name in MODEL_OVERRIDES:
                    self.add(item, "py-call-override", f"{node.name}.{item.name} changes how the harness calls or reads the model")
            else:  # a class attribute: `__call__ = fn`, `forward = nn.Sequential(...)`
                targets = (item.targets if isinstance(item, ast.Assign) else
                           [item.target] if isinstance(item, (ast.AnnAssign, ast.AugAssign)) else [])
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and (n.id in CLASS_OVERRIDES or (
                                guarded and n.id in CALL_ATTRIBUTES)):
                            self.add(item, "py-call-override", f"{node.name}.{n.id} is bound to a value, not a "
                                     "method: what the harness's call of the model runs is not forward")
        for d in node.decorator_list:
            self.visit(d)
        for b in node.bases:
            self.visit(b)
        was, was_instances = self.torch_submodules, self.instances
        self.torch_submodules = self.submodules_of(node) if self.torch_compute != "off" else {}
        self.instances = {}
        if self.torch_compute != "off":
            inits = [f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "__init__"]
            self.instances = {t.id: c for t, c in self.instance_bindings(
                inits, lambda t: t.attr if isinstance(t, ast.Attribute) and self.owner_attr(t) == t.attr else None)}
        if self.torch_compute != "off" and (node.name in self.model_family or node.name in self.module_classes):
            for b, expr in zip(bases, node.bases):
                if b != "torch.nn.Module" and (torch_module_class(b) or b in self.torch_module_classes):
                    self.add(expr, "py-torch-compute", f"class {node.name} derives from `{b}`: its forward (and "
                             "super().forward) is torch's (the policy allows only your kernels)", self.torch_compute)
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__":
                self.visit_function(item, False)  # construction: the weights' set-up, not the call
            else:
                self.visit(item)
        self.torch_submodules, self.instances = was, was_instances

    def makes_torch_module(self, call):
        """A call that constructs a torch module: torch.nn.Linear(...), or
        a class of the file deriving from one (its forward is torch's)."""
        made = self.dotted(call.func) or ""
        return torch_module_class(made) or made in self.torch_module_classes

    def holds_torch(self, expr, found, taint=None):
        """What an expression holds torch compute in: a torch module it
        constructs, a compute function named as a value, a submodule already
        found (self.linear in `[self.linear, nn.ReLU()]`), a module-level
        name that holds one. Its description, or None."""
        taint = self.tainted_globals if taint is None else taint
        for n in ast.walk(expr):
            if isinstance(n, ast.Call) and self.makes_torch_module(n):
                return self.dotted(n.func)
            # An instance of what holds torch compute holds it too (`c = C()`
            # where C = make_dataclass(..., namespace={"__call__": ...}) or a
            # class of the file holding it: calling c runs it).
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id not in self.aliases:
                if n.func.id in taint:
                    return taint[n.func.id]
            if isinstance(n, ast.Call) and self.owner_attr(n.func) in found:
                return found[self.owner_attr(n.func)]
            if isinstance(n, (ast.Name, ast.Attribute)):
                parent = getattr(n, "kb_parent", None)
                if isinstance(parent, ast.Call) and parent.func is n:
                    continue  # a call: its result, not the function
                name = self.dotted(n)
                if name and self.is_compute(name) and not isinstance(parent, ast.Attribute):
                    return name
                owned = self.owner_attr(n)
                if owned in found and self.hands_out(n):
                    return found[owned]
                if isinstance(n, ast.Name) and n.id in taint and self.hands_out(n):
                    return taint[n.id]
        return None

    def owner_attr(self, node):
        """NAME where node is self.NAME, cls.NAME, ClassOfTheFile.NAME,
        type(self).NAME or self.__class__.NAME; else None."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and self.owner_attr(ast.Attribute(value=node.args[0], attr=node.args[1].value)) is not None):
            return node.args[1].value  # getattr(self, "seq")
        if not isinstance(node, ast.Attribute):
            return None
        v = node.value
        if isinstance(v, ast.Name) and (v.id in ("self", "cls") or v.id in self.class_bases):
            return node.attr
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "type":
            return node.attr
        if isinstance(v, ast.Attribute) and v.attr == "__class__":
            return node.attr
        return None

    @staticmethod
    def hands_out(node):
        """Whether an object standing at node is handed on (as a value, an
        element, an iterable, through a container's methods) rather than
        only read from (self.linear.weight) or called (judged as a call)."""
        cur = node
        parent = getattr(cur, "kb_parent", None)
        while isinstance(parent, ast.Subscript) and parent.value is cur:
            cur, parent = parent, getattr(parent, "kb_parent", None)
        if isinstance(parent, ast.Call) and parent.func is cur:
            return False
        if isinstance(parent, ast.Attribute) and parent.value is cur:
            return parent.attr in CONTAINER_METHODS
        return True

    def submodules_of(self, node):
        """What a class holds torch compute in: `self.NAME = torch.nn.Linear(...)`
        (or `= torch.relu`, `= [self.linear, nn.ReLU()]`, `= nn.Sequential(...)`)
        in its __init__, and `NAME = torch.addmm` in its body: NAME -> what it
        runs (calling self.NAME in forward, or handing it on, is torch compute)."""
        found = {}
        statements = []
        for item in node.body:
            if isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value is not None:
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                statements.append(([n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)], item.value))
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__":
                for st in ast.walk(item):
                    if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                        names = [n.attr for t in targets for n in ast.walk(t)
                                 if isinstance(n, ast.Attribute) and self.owner_attr(n) == n.attr]
                        statements.append((names, st.value))
                    elif (isinstance(st, ast.Call) and len(st.args) == 3 and isinstance(st.args[1], ast.Constant)
                          and isinstance(st.args[1].value, str) and self.owner_attr(
                              ast.Attribute(value=st.args[0], attr=st.args[1].value)) is not None
                          and ((isinstance(st.func, ast.Name) and st.func.id == "setattr")
                               or (isinstance(st.func, ast.Attribute) and st.func.attr == "__setattr__"))):
                        statements.append(([st.args[1].value], st.args[2]))  # setattr(self, "act", torch.relu)
                    elif (isinstance(st, ast.Call) and isinstance(st.func, ast.Attribute)
                          and st.func.attr in ("add_module", "register_module") and len(st.args) == 2
                          and isinstance(st.args[0], ast.Constant) and isinstance(st.args[0].value, str)):
                        statements.append(([st.args[0].value], st.args[1]))
        for item in node.body:  # self.X = a parameter handed torch compute, in any method
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item in self.fed:
                for st in ast.walk(item):
                    if isinstance(st, ast.Assign) and isinstance(st.value, ast.Name) and st.value.id in self.fed[item]:
                        for t in st.targets:
                            if isinstance(t, ast.Attribute) and self.owner_attr(t) == t.attr:
                                found.setdefault(t.attr, self.fed[item][st.value.id])
        changed = True
        while changed:
            changed = False
            for names, value in statements:
                held = self.holds_torch(value, found)
                for n in names:
                    if held and n not in found:
                        found[n] = held
                        changed = True
        return found

    def module_taint(self, tree):
        """Module-level names bound to what holds torch compute
        (`OPS = {"mm": torch.addmm}`, `LAYER = nn.Linear(4, 4)`)."""
        taint = {}
        changed = True
        while changed:
            changed = False
            for item in tree.body:
                if isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value is not None:
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    held = self.holds_torch(item.value, {}, taint)
                    for t in targets:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name) and held and n.id not in taint:
                                taint[n.id] = held
                                changed = True
        return taint

    def union_holdings(self):
        found = {}
        for held in self.class_holdings.values():
            found.update(held)
        return found

    def callees(self, call, functions, methods):
        """The file's functions a call may run, each with how many of its
        leading parameters the call does not fill (self): by name,
        flow-insensitively (any method of that name, of any class)."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.class_nodes:
            init = [f for f in self.class_nodes[func.id].body
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "__init__"]
            return [(f, 1) for f in init]
        if isinstance(func, ast.Name):
            return [(f, 0) for f in functions.get(func.id, [])]
        if isinstance(func, ast.Attribute):
            return [(f, 1) for f in methods.get(func.attr, [])]
        return []

    def fed_params(self, tree):
        """The parameters (and locals) of the file's functions that are
        handed torch compute: an argument that holds it at any call of the
        function (`Holder(nn.Linear(...))`, `make(self.linear)`), a local
        bound to it (`lin = self.linear` in __init__, called by a closure)."""
        functions, methods = {}, {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for f in node.body:
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods.setdefault(f.name, []).append(f)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(node.name, []).append(node)
        held = self.union_holdings()
        fed = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for f, skip in self.callees(node, functions, methods):
                    params = [a.arg for a in f.args.posonlyargs + f.args.args][skip:]
                    for i, arg in enumerate(node.args):
                        what = self.holds_torch(arg, held)
                        if what and i < len(params):
                            fed.setdefault(f, {})[params[i]] = what
                        elif what and f.args.vararg:
                            fed.setdefault(f, {})[f.args.vararg.arg] = what
                    for kw in node.keywords:
                        what = self.holds_torch(kw.value, held)
                        if what and kw.arg:
                            fed.setdefault(f, {})[kw.arg] = what
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for st in ast.walk(node):
                    if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                        what = self.holds_torch(st.value, held)
                        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                        for t in targets:
                            for n in ast.walk(t):
                                if what and isinstance(n, ast.Name):
                                    fed.setdefault(node, {})[n.id] = what
        for f, names in self.fed.items():  # what earlier rounds found stays
            for n, what in names.items():
                fed.setdefault(f, {}).setdefault(n, what)
        return fed

    def instance_bindings(self, statements, target_name):
        """(target, class) for each `TARGET = C(...)` among statements where C
        is a class of the file that holds torch compute."""
        for st in statements:
            for node in ast.walk(st):
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                        and isinstance(node.value.func, ast.Name) and self.class_holdings.get(node.value.func.id)):
                    for t in node.targets:
                        name = target_name(t)
                        if name:
                            yield type("T", (), {"id": name})(), node.value.func.id

    def instance_holding(self, node):
        """What `V.NAME` runs where V is an instance of a class of the file
        (self.X = C(...) in __init__, a module-level N = C(...), or the class
        itself: C.NAME) and C holds torch compute under NAME; else None."""
        if not isinstance(node, ast.Attribute):
            return None
        v, cls = node.value, None
        if isinstance(v, ast.Name) and v.id in self.class_nodes and v.id not in self.aliases:
            cls = v.id
        elif isinstance(v, ast.Name) and v.id in self.global_instances and v.id not in self.aliases:
            cls = self.global_instances[v.id]
        elif self.owner_attr(v) in self.instances:
            cls = self.instances[self.owner_attr(v)]
        if cls is None:
            return None
        return self.class_holdings.get(cls, {}).get(node.attr)

    def held_root(self, func):
        """(text, what) where func is an attribute chain rooted at a
        module-level name that holds torch compute (`NS.f` where
        NS = types.SimpleNamespace(f=torch.relu)), or two or more deep from
        a `self.X` that holds it (`self.box.f`); else None."""
        if not isinstance(func, ast.Attribute):
            return None
        root, _ = self.chain(func)
        if root is not None and root.id in self.tainted_globals and root.id not in self.aliases:
            return root.id, self.tainted_globals[root.id]  # NS.f(...) where NS = SimpleNamespace(f=torch.relu)
        if not isinstance(func.value, ast.Attribute):
            return None
        n = func.value
        while isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute):
            n = n.value
        held = None
        if isinstance(n, ast.Attribute) and self.owner_attr(n) is not None and isinstance(n.value, ast.Name) \
                and n.value.id in ("self", "cls"):
            held = self.torch_submodules.get(n.attr)
        if held is None:
            return None
        return ast.get_source_segment("\n".join(self.lines), n) or n.attr, held

    def scope_tainted(self, name):
        """What a plain name called here holds, where an enclosing function's
        parameter or local was handed torch compute; else None."""
        for names in reversed(self.scope_taint):
            if name in names:
                return names[name]
        return None

    def judge_held_value(self, node):
        """Under --torch-compute, in forward: a submodule or container of
        torch compute (self.seq, OPS) handed on (iterated, bound, passed,
        read through .get/.values) is called where the rules do not look."""
        if not (self.in_forward and self.torch_compute != "off"):
            return
        owned = self.owner_attr(node)
        held = self.torch_submodules.get(owned) if owned else None
        if held is None and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            held = self.tainted_globals.get(node.id)
        parent = getattr(node, "kb_parent", None)
        if owned in MODULE_TRAVERSAL and not (isinstance(parent, ast.Call) and parent.func is node):
            held = f"nn.Module.{owned}"  # self._modules: every submodule by name
        elif held is None or not self.hands_out(node):
            return
        what = ast.get_source_segment("\n".join(self.lines), node) or "it"
        self.add(node, "py-torch-compute", f"`{what}` holds torch compute (`{held}`) and is handed on in forward "
                 "(iterated, bound, passed or read through a container's method): it is called where the rules do "
                 "not look (the policy allows only your kernels)", self.torch_compute)

    # Under --torch-compute, the call is forward and whatever it calls: every
    # function and lambda of the file but a class's __init__ (a module-level
    # helper that forward calls computes in forward as much as forward does).
    def visit_function(self, node, computes):
        was = self.in_forward
        self.in_forward = computes
        self.scope_taint.append(self.fed.get(node, {}))
        self.generic_visit(node)
        self.scope_taint.pop()
        self.in_forward = was

    def visit_FunctionDef(self, node):
        self.visit_function(node, True)

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def judge_getattr(self, node):
        """getattr(obj, NAME): a literal NAME is judged as the attribute
        `.NAME` would be (an escape attribute); a computed one could be any."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            if name.value in ESCAPE_ATTRIBUTES:
                self.add(node, "py-introspection", f"`getattr(..., {name.value!r})` reaches objects the solution was "
                         "not handed (classes, module globals, frames: the harness's too)")
        else:
            self.add(node, "py-dynamic-code", "getattr with a computed name reaches any attribute, past every rule "
                     "on names (use the attribute, or a literal name)")

    def is_compute(self, name):
        """A dotted name that is compute under --torch-compute: torch's or
        numpy's compute functions, operator's arithmetic."""
        if not name:
            return False
        last = name.split(".")[-1]
        if name.startswith("operator."):
            return last not in OPERATOR_NOT_COMPUTE
        if name.startswith(COMPUTE_NAMESPACES) and not name.startswith("torch.ops.load_library"):
            return True
        if name.startswith("torch.nn.") and last in ("forward", "__call__", "_call_impl", "_wrapped_call_impl"):
            return True  # torch.nn.Linear.forward(self.linear, x)
        return (name.startswith("torch.") or name.startswith("numpy.")) and last in self.compute

    def judge_compute_value(self, node, name):
        """Under --torch-compute, a compute function named in forward but not
        called there (a parameter's default, a name bound to it, an element
        of a container) is called somewhere the rules do not follow."""
        if not (self.in_forward and self.torch_compute != "off" and self.is_compute(name)):
            return
        parent = getattr(node, "kb_parent", None)
        if isinstance(parent, ast.Call) and parent.func is node:
            return  # a call: visit_Call judges it
        self.add(node, "py-torch-compute", f"`{name}` passed around as a value in forward: torch compute wherever "
                 "it is called (the policy allows only your kernels)", self.torch_compute)

    def judge_class_call(self, node):
        """Classes made at run time: type(name, bases, namespace), a
        metaclass of the file called, type(x)(...) or x.__class__(...) with
        a class's three arguments (the namespace may hold __call__)."""
        func = node.func
        nargs = len(node.args) + len(node.keywords)
        if isinstance(func, ast.Name) and func.id == "type" and "type" not in self.aliases and nargs != 1:
            self.add(node, "py-call-override", "type(name, bases, namespace) makes a class at run time: its namespace "
                     "(__call__, forward) is not read by the rules")
        elif isinstance(func, ast.Name) and func.id in self.metaclasses:
            self.add(node, "py-call-override", f"calls the metaclass {func.id}: a class made at run time")
        elif nargs >= 3 and ((isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type")
                             or (isinstance(func, ast.Attribute) and func.attr == "__class__")):
            self.add(node, "py-call-override", "calls an object's class (its metaclass) with a class's arguments: "
                     "a class made at run time")

    SETATTR_LIKE = {"__setattr__", "__delattr__"}

    def judge_setattr(self, node):
        """setattr(obj, NAME, v), object.__setattr__(obj, NAME, v),
        obj.__setattr__(NAME, v): NAME not a literal, or one that the
        harness's call of the model reaches (forward, __call__, a dunder),
        replaces what model(*inputs) runs."""
        func = node.func
        builtin = isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and func.id not in self.aliases
        method = isinstance(func, ast.Attribute) and func.attr in self.SETATTR_LIKE
        if not (builtin or method):
            return
        candidates = node.args[1:2] if builtin else node.args[:2]
        names = [a.value for a in candidates if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not names:
            self.add(node, "py-call-override", "sets an attribute by a computed name (it may be forward or __call__): "
                     "what the harness's call of the model runs is not read by the rules")
        elif any(n in CALL_ATTRIBUTES or (n.startswith("__") and n.endswith("__")) for n in names):
            self.add(node, "py-call-override", f"sets `{names[0]}` by name: what the harness's call of the model "
                     "reaches must be the class's own forward")

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and "getattr" not in self.aliases:
            self.judge_getattr(node)
        self.judge_class_call(node)
        self.judge_setattr(node)
        self.judge_held_value(node)  # getattr(self, "seq") handed on
        if isinstance(func, ast.Attribute) and func.attr in HOOKS:
            self.add(node, "py-call-override", f"`{func.attr}` runs code around the model's call")
        if self.in_forward and self.torch_compute != "off":
            name = self.dotted(func)
            method = func.attr if isinstance(func, ast.Attribute) else None
            torch_fn = name and (name.startswith("torch.") or name.startswith("numpy.")
                                 or name.startswith("operator."))
            inner = func.value if isinstance(func, ast.Attribute) else None
            if torch_fn and self.is_compute(name):
                self.add(node, "py-torch-compute", f"`{name}` is torch compute in forward (the policy allows only your kernels)",
                         self.torch_compute)
            elif method and method.startswith("__") and method.endswith("__") and method != "__init__":
                self.add(node, "py-torch-compute", f"`.{method}()` calls an operator's method directly in forward: "
                         "torch compute on a tensor (the policy allows only your kernels)", self.torch_compute)
            elif isinstance(func, ast.Subscript):
                self.add(node, "py-torch-compute", "a function taken from a container is called in forward: the rules "
                         "cannot tell it from torch compute (call your kernels by name)", self.torch_compute)
            elif isinstance(func, ast.Call):
                self.add(node, "py-torch-compute", "the result of a call is called in forward (`OPS.get(\"mm\")(...)`, "
                         "`nn.ReLU()(x)`): the rules cannot tell it from torch compute (call your kernels by name)",
                         self.torch_compute)
            elif self.makes_torch_module(node):
                self.add(node, "py-torch-compute", f"`{name}` makes a torch module in forward: calling it is torch "
                         "compute (the policy allows only your kernels)", self.torch_compute)
            elif (method in ("forward", "__call__", "_call_impl", "_wrapped_call_impl")
                  and self.holds_torch(inner, self.torch_submodules) is not None):
                self.add(node, "py-torch-compute", f"`.{method}(...)` runs a torch module "
                         f"(`{self.holds_torch(inner, self.torch_submodules)}`) in forward: torch compute (the policy "
                         "allows only your kernels)", self.torch_compute)
            elif method and not torch_fn and method in self.compute:
                self.add(node, "py-torch-compute", f"`.{method}()` is torch compute in forward (the policy allows only your kernels)",
                         self.torch_compute)
            elif self.instance_holding(func) is not None:
                self.add(node, "py-torch-compute", f"`{ast.get_source_segment(chr(10).join(self.lines), func) or func.attr}"
                         f"(...)` runs `{self.instance_holding(func)}`, held by an object of the file's own class, in "
                         "forward: torch compute (the policy allows only your kernels)", self.torch_compute)
            elif self.held_root(func) is not None and func.attr not in PAPER_ALLOWED:
                self.add(node, "py-torch-compute", f"`{ast.get_source_segment(chr(10).join(self.lines), func) or func.attr}"
                         f"(...)` is called through `{self.held_root(func)[0]}`, which holds torch compute "
                         f"(`{self.held_root(func)[1]}`), in forward: the rules cannot tell it from torch compute "
                         "(the policy allows only your kernels)", self.torch_compute)
            elif isinstance(func, ast.Name) and self.scope_tainted(func.id) is not None:
                self.add(node, "py-torch-compute", f"`{func.id}(...)` runs `{self.scope_tainted(func.id)}`, handed to "
                         "this function (an argument at one of its calls, or a local of an enclosing one), in forward: "
                         "torch compute (the policy allows only your kernels)", self.torch_compute)
            elif self.owner_attr(func) in self.torch_submodules:
                self.add(node, "py-torch-compute", f"`{ast.get_source_segment(chr(10).join(self.lines), func) or func.attr}"
                         f"(...)` runs `{self.torch_submodules[func.attr]}` (made in __init__ or the class body) in "
                         "forward: torch compute (the policy allows only your kernels)", self.torch_compute)
            elif isinstance(func, ast.Name) and func.id in self.tainted_globals and func.id not in self.aliases:
                self.add(node, "py-torch-compute", f"`{func.id}(...)` runs `{self.tainted_globals[func.id]}` (bound at "
                         "module level) in forward: torch compute (the policy allows only your kernels)",
                         self.torch_compute)
            elif method in MODULE_TRAVERSAL and (
                    (isinstance(inner, ast.Name) and inner.id == "self") or isinstance(inner, ast.Call)
                    or self.holds_torch(inner, self.torch_submodules) is not None):
                self.add(node, "py-torch-compute", f"`.{method}(...)` reaches submodules by traversal in forward: the "
                         "rules cannot tell what is called from torch compute", self.torch_compute)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                self.add(node, "py-torch-compute", f"`self.{func.attr}(...)` runs a submodule or method in forward; "
                         "under this policy forward calls only your kernels", "warning")
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if self.in_forward and self.torch_compute != "off" and isinstance(node.op, ast.MatMult):
            self.add(node, "py-torch-compute", "`@` is torch compute in forward (the policy allows only your kernels)",
                     self.torch_compute)
        self.generic_visit(node)


LOAD_INLINE = "torch.utils.cpp_extension.load_inline"
LOAD_INLINE_ARGS = ["name", "cpp_sources", "cuda_sources", "sycl_sources", "functions", "extra_cflags",
                    "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags", "extra_include_paths"]


class Constants:
    """Module-level names bound once to a constant expression (strings, lists,
    dicts, concatenations): what load_inline's arguments may refer to."""

    def __init__(self, tree):
        self.values, self.nodes, counts = {}, {}, {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        counts[t.id] = counts.get(t.id, 0) + (1 if isinstance(node, ast.Assign) else 2)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if counts.get(name) == 1:
                    try:
                        self.values[name] = self.eval(node.value)
                        self.nodes[name] = node.value
                    except ValueError:
                        pass

    def eval(self, node):
        """The value of a constant expression; ValueError where it is not one.
        Never anything else, whatever the code (a list as a dict key, `+` of
        mismatched types, nesting past the recursion limit): the checker's
        own failure would be infra_error, no verdict at all."""
        try:
            return self.value(node)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001 - any other failure: not a constant
            raise ValueError(f"not a constant ({type(e).__name__})") from None

    def value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
            return node.value
        if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) and isinstance(v.value, str)
                                                   for v in node.values):
            return "".join(v.value for v in node.values)
        if isinstance(node, ast.Name) and node.id in self.values:
            return self.values[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if type(left) is type(right) and isinstance(left, (str, list)):
                return left + right
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
            out = {}
            for k, v in zip(node.keys, node.values):
                key = self.value(k)
                if not isinstance(key, (str, int, float, bool, type(None))):
                    raise ValueError("a dict key that is not a scalar")
                out[key] = self.value(v)
            return out
        raise ValueError(ast.dump(node)[:80])


ESCAPE = re.compile(r"\\(\n|[\\'\"abfnrtv]|[0-7]{1,3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\})")


def utf8_len(text):
    return len(text.encode("utf-8", "surrogatepass"))


class SourceMap:
    """Where each character of a literal string argument was written: a list
    of segments [offset, line, column] (offset in the value's UTF-8 bytes;
    line and column 1-based, the column in bytes): the value's bytes from
    offset on continue the file's text from (line, column) until the next
    segment (an escape, an implicit or `+` concatenation, a name bound
    elsewhere starts one)."""

    def __init__(self, lines, constants):
        self.lines, self.constants = lines, constants

    def of(self, node):
        """The map of a string-valued node, or a list of maps (one a string)
        for a list-valued one; a value's start where the map cannot be read
        finer. Whatever the node, never raises."""
        try:
            value = self.constants.eval(node)
        except ValueError:
            return self.start(node)
        try:
            if isinstance(value, list):
                maps = self.list_map(node)
                if len(maps) == len(value):
                    return maps
                return [self.start(node) for _ in value]
            return self.str_map(node)
        except Exception:  # noqa: BLE001 - a map is a help for messages, never a failure
            return [self.start(node) for _ in value] if isinstance(value, list) else self.start(node)

    @staticmethod
    def start(node):
        return [[0, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1]]

    def list_map(self, node):
        if isinstance(node, ast.Name) and node.id in self.constants.nodes:
            return self.list_map(self.constants.nodes[node.id])
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.str_map(e) for e in node.elts]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.list_map(node.left) + self.list_map(node.right)  # lists of sources
        raise ValueError("not a list")

    def str_map(self, node):
        if isinstance(node, ast.Name) and node.id in self.constants.nodes:
            return self.str_map(self.constants.nodes[node.id])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left_value = self.constants.eval(node.left)
            if not isinstance(left_value, str):
                return self.start(node)
            left, right = self.str_map(node.left), self.str_map(node.right)
            shift = utf8_len(left_value)
            return left + [[o + shift, line, col] for o, line, col in right]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.constant(node)
        return self.start(node)  # an f-string of constants, a non-string: its start

    def constant(self, node):
        segment = ast.get_source_segment("\n".join(self.lines), node) or ""
        start_line, start_col = node.lineno, node.col_offset  # bytes
        first = self.lines[start_line - 1].encode("utf-8")[:start_col].decode("utf-8", "replace")
        chars = []  # (value char, line, char column 0-based)
        try:
            # In parentheses: an implicit concatenation may span lines.
            tokens = [t for t in tokenize.generate_tokens(io.StringIO("(" + segment + ")").readline)
                      if t.type == tokenize.STRING]
        except (tokenize.TokenError, SyntaxError):
            return [[0, node.lineno, node.col_offset + 1]]
        for tok in tokens:
            line = start_line + tok.start[0] - 1
            col = tok.start[1] + (len(first) - 1 if tok.start[0] == 1 else 0)
            text = tok.string
            prefix = re.match(r"[A-Za-z]*", text).group()
            quote = text[len(prefix):len(prefix) + 3] if text[len(prefix):len(prefix) + 3] in ('"""', "'''") \
                else text[len(prefix)]
            body = text[len(prefix) + len(quote):len(text) - len(quote)]
            col += len(prefix) + len(quote)
            raw = "r" in prefix.lower()
            i = 0
            while i < len(body):
                m = None if raw else ESCAPE.match(body, i)
                if m:
                    esc = m.group()
                    value = "" if esc == "\\\n" else ast.literal_eval('"' + esc + '"')
                    chars.extend((c, line, col) for c in value)
                    for c in esc:
                        line, col = (line + 1, 0) if c == "\n" else (line, col + 1)
                    i += len(esc)
                    continue
                chars.append((body[i], line, col))
                line, col = (line + 1, 0) if body[i] == "\n" else (line, col + 1)
                i += 1
        segments, offset, expect = [], 0, None
        for c, line, col in chars:
            text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
            byte_col = utf8_len(text[:col]) + 1
            if (line, byte_col) != expect:
                segments.append([offset, line, byte_col])
            expect = (line + 1, 1) if c == "\n" else (line, byte_col + utf8_len(c))
            offset += utf8_len(c)
        return segments or [[0, node.lineno, node.col_offset + 1]]


def load_inline_calls(checker, tree):
    """Each load_inline(...) call: (node, {argument: value} or the reason it is not literal)."""
    constants = Constants(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and checker.dotted(node.func) == LOAD_INLINE):
            continue
        args, problem = {}, None
        given = list(zip(LOAD_INLINE_ARGS, node.args)) + [(k.arg, k.value) for k in node.keywords]
        for name, value in given:
            if name is None:
                problem = "**kwargs"
                break
            try:
                args[name] = constants.eval(value)
            except ValueError:
                problem = f"argument {name}"
                break
        yield node, (args if problem is None else problem), dict(given)


def bad_load_inline_types(args):
    """The first argument whose literal value is not of load_inline's types
    (what the build stage reads must be strings), or None."""
    def strings(v):
        return isinstance(v, str) or (isinstance(v, list) and all(isinstance(e, str) for e in v))
    for key, v in args.items():
        if key == "functions":
            if not (v is None or strings(v) or (isinstance(v, dict)
                                                and all(isinstance(k, str) and isinstance(e, str) for k, e in v.items()))):
                return key
        elif key in LOAD_INLINE_ARGS and key != "name" and v is not None and not strings(v):
            return key
    return None


def unanalyzable(rel, e):
    """A file whose analysis failed in a way no rule foresaw: the file's own
    failure (a static violation), never an ending of this script."""
    return {"rule": "py-unanalyzable", "severity": "error", "file": rel, "line": 0, "column": 0,
            "message": f"the Python rules could not analyse this file ({type(e).__name__}): a solution the rules "
                       "cannot read is not passed unread", "source_line": ""}


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    torch_compute = "off"
    if "--torch-compute" in argv:
        i = argv.index("--torch-compute")
        torch_compute = argv[i + 1]
        del argv[i:i + 2]
    extract = "--extract" in argv
    if extract:
        argv.remove("--extract")
    source_map = "--source-map" in argv
    if source_map:
        argv.remove("--source-map")
    root, files = argv[0], argv[1:]
    for rel in files:
        with open(f"{root}/{rel}", encoding="utf-8", errors="replace") as f:
            text = f.read()
        # Whatever the code does to the parser (a syntax error, nesting
        # deeper than Python's recursion limit, NUL bytes) is the file's
        # fault: a parse error, which fails the static stage, never an
        # ending of this script, which would be infra_error (no reward,
        # and so no penalty either).
        try:
            check_file(rel, text, torch_compute, extract, len(files), source_map)
        except SyntaxError as e:
            print(json.dumps({"parse_error": f"{rel}:{e.lineno or 0}:{e.offset or 0}: error: {e.msg}"}), flush=True)
        except (RecursionError, MemoryError, ValueError) as e:
            print(json.dumps({"parse_error": f"{rel}:0:0: error: cannot be checked: {type(e).__name__}"}), flush=True)
        except Exception as e:  # noqa: BLE001 - any other failure on the file's code is the file's
            print(json.dumps(unanalyzable(rel, e)), flush=True)
    print(json.dumps({"done": True, "files": len(files)}), flush=True)


def check_file(rel, text, torch_compute, extract, nfiles, source_map=False):
    """Parses and checks one file, printing its findings (and, with
    extract, its load_inline calls); raises what parsing raises."""
    tree = ast.parse(text, filename=rel)
    checker = Checker(rel, text.splitlines(), torch_compute)
    checker.annotate(tree)
    checker.prepare(tree)
    checker.visit(tree)
    maps = SourceMap(text.split("\n"), Constants(tree)) if source_map else None
    for node, args, given in load_inline_calls(checker, tree):
        if isinstance(args, str):
            checker.add(node, "py-load-inline", f"load_inline's {args} is not a literal (or a module-level name "
                        "bound once to one): the build stage must read every source and flag without running code")
        elif not isinstance(args.get("name"), str) or not args["name"].isidentifier():
            checker.add(node, "py-load-inline", "load_inline's name must be a literal Python identifier")
        elif bad_load_inline_types(args):
            checker.add(node, "py-load-inline", f"load_inline's {bad_load_inline_types(args)} is not what load_inline "
                        "takes (a string or a list of strings; functions: a string, a list of strings or a dict of "
                        "strings to strings)")
        else:
            if extract:
                args["file"], args["line"] = rel, node.lineno
                print(json.dumps({"extension": args}), flush=True)
            if maps:
                entry = {"file": rel, "line": node.lineno, "name": args["name"]}
                for key in ("cpp_sources", "cuda_sources"):
                    if key in given:
                        m = maps.of(given[key])
                        entry[key] = [m] if isinstance(args[key], str) else m
                print(json.dumps({"source_map": entry}), flush=True)
    if rel.endswith("model_new.py") or nfiles == 1:
        if not checker.model_classes:
            checker.add(tree, "py-no-model", "defines no class ModelNew")
    for finding in checker.findings:
        print(json.dumps(finding), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
