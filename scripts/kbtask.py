"""Shared helpers of the task-bundle scripts (capture.py, baseline.py,
expected.py): loading a KernelBench-style program, describing and making its
inputs, flattening outputs. Python is used here only because PyTorch itself
is needed; everything else lives in lib/task (C++). docs/task-format.md is
the reference for every file and field written here.

The input generator of a "spec" bundle is mirrored exactly by
lib/task/task.cpp (specTensor): same calls, same order, same generator, so
C++ and Python make identical inputs for a seed.
"""

import ast
import contextlib
import hashlib
import importlib.util
import json
import math
import os
import sys
import tempfile
import traceback
import warnings

warnings.filterwarnings("ignore", message=".*NumPy.*")
import torch  # noqa: E402

# Every script here computes as the judge's reference does, in full float32
# (lib/task task::useFullFloat32): PyTorch lets cuDNN's convolutions and RNNs
# use TF32 by default, and then two runs of one conv task, or its saved
# TorchScript against eager, can differ by 1e-4 (cuDNN's algorithm choice),
# more than the strict tolerance: five KernelBench conv tasks failed
# capture's checks on an H100 (2026-12-06), most likely so. Set on import,
# so that no script can forget it.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

FORMAT_VERSION = 1
DEFAULT_INIT_SEED = 42
DEFAULT_SEEDS = [0, 1, 2, 3, 4]

DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float64: "float64",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.bool: "bool",
}
DTYPES = {v: k for k, v in DTYPE_NAMES.items()}


class TaskError(Exception):
    """A problem with one task; `kind` is one of the reasons listed in
    docs/kbsynth.md (syntax_error, missing_function, load_error, init_error,
    inputs_error, forward_error, non_tensor_output, nondeterministic,
    capture_error, spec_error, export_error, compile_error, mismatch)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def torch_version():
    return torch.__version__.split("+")[0]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def one_line(exc):
    """`Type: first non-empty line of the message`, at most 300 characters."""
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


_counter = [0]


def load_program(path):
    """Executes model.py as a fresh module. Raises TaskError for syntax
    errors, errors at import, and missing Model / get_inputs /
    get_init_inputs."""
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        src = f.read()
    try:
        ast.parse(src, filename=path)
    except SyntaxError as e:
        raise TaskError("syntax_error", f"line {e.lineno}: {e.msg}")
    _counter[0] += 1
    name = f"kb_task_program_{_counter[0]}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # TorchScript resolves names through sys.modules
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - any error of the program is reported
        raise TaskError("load_error", one_line(e))
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(getattr(mod, n, None))]
    if missing:
        raise TaskError("missing_function", "model.py does not define " + ", ".join(missing))
    if not (isinstance(mod.Model, type) and issubclass(mod.Model, torch.nn.Module)):
        raise TaskError("missing_function", "Model is not a torch.nn.Module subclass")
    mod.__kb_source__ = src
    mod.__kb_path__ = path
    return mod


def init_args(mod):
    try:
        args = mod.get_init_inputs()
    except Exception as e:  # noqa: BLE001
        raise TaskError("init_error", "get_init_inputs: " + one_line(e))
    try:
        return list(args)
    except TypeError:
        raise TaskError("init_error", "get_init_inputs did not return a list")


def gpu_out_of_memory(e):
    """Whether exception `e` is a GPU out of memory: torch's own exception, or
    the RuntimeError that carries it out of the TorchScript interpreter or an
    AOTInductor package. Under several workers sharing a GPU it says nothing
    about the task."""
    return isinstance(e, torch.cuda.OutOfMemoryError) or gpu_out_of_memory_text(str(e))


def gpu_out_of_memory_text(text):
    """Whether a message says the GPU ran out of memory (the caching
    allocator's "CUDA out of memory", or a CUDA call's "CUDA error: out of
    memory")."""
    return "CUDA out of memory" in text or "CUDA error: out of memory" in text


def default_device(device):
    """A context in which factory calls (torch.rand, nn.Linear's weights, ...)
    make their tensors on `device` when it is a GPU; nothing for the CPU or
    None."""
    if device is not None and torch.device(device).type != "cpu":
        return torch.device(device)
    return contextlib.nullcontext()


def build_model(mod, init_seed, args=None, device=None):
    """Model(*get_init_inputs()) with torch seeded by init_seed. With a GPU
    `device`, the constructor runs with that device as the default for every
    factory call, so the weights are drawn there by its generator (seconds
    of CPU time for a large model become milliseconds); a GPU out of memory
    is raised as is."""
    if args is None:
        args = init_args(mod)
    torch.manual_seed(init_seed)
    try:
        with default_device(device):
            model = mod.Model(*args)
    except Exception as e:  # noqa: BLE001
        if gpu_out_of_memory(e):
            raise
        raise TaskError("init_error", "Model(*get_init_inputs()): " + one_line(e))
    return model


def build_model_where(mod, init_seed, args, device):
    """(model, where): build_model on `device`, else on the CPU when the
    constructor cannot run with the GPU as its default device (it calls
    .numpy(), mixes devices, ...). `where` is the torch.device the weights
    were drawn on (task.json's init.device records its type)."""
    device = torch.device(device)
    if device.type != "cpu":
        try:
            return build_model(mod, init_seed, args, device), device
        except TaskError:
            pass
    return build_model(mod, init_seed, args), torch.device("cpu")


def bundle_weights(bundle, device):
    """reference.pt's parameters and buffers by state_dict name, on `device`:
    a bundle's weights, wherever they were drawn (task.json init.device:
    weights drawn on a GPU cannot be drawn again elsewhere value for value,
    since the device generators' streams depend on the GPU model). Load
    them once; model_with_weights copies from them."""
    ref = torch.jit.load(os.path.join(bundle, "reference.pt"), map_location=device)
    return dict(ref.state_dict())


def model_with_weights(mod, task, weights, device):
    """The bundle's nn.Module on `device`: Model(*get_init_inputs()) built for
    its structure (on `device` when it can be, which is fast), then
    `weights` (bundle_weights) copied into it. model.py and reference.pt
    must agree on every parameter and buffer's name, shape and dtype
    (TaskError "mismatch" otherwise)."""
    model, _ = build_model_where(mod, task["init"]["seed"], init_args(mod), device)
    model = model.to(device)
    own = model.state_dict()
    for k, v in own.items():
        r = weights.get(k)
        if r is None or r.shape != v.shape or r.dtype != v.dtype:
            raise TaskError("mismatch", f"model.py and reference.pt disagree on {k} (re-export the bundle)")
    extra = sorted(set(weights) - set(own))
    if extra:
        raise TaskError("mismatch", f"reference.pt has {extra[0]}, which model.py does not (re-export the bundle)")
    with torch.no_grad():
        for k, v in own.items():
            v.copy_(weights[k])
    return model


def json_value(v):
    """An init argument or scalar as JSON (for the record only)."""
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, torch.Tensor):
        return {"tensor": {"dtype": DTYPE_NAMES.get(v.dtype, str(v.dtype)), "shape": list(v.shape)}}
    if isinstance(v, torch.dtype):
        return str(v)
    return repr(v)


def python_inputs(mod, seed, device=None):
    """get_inputs() with torch's default generators seeded, as C++ does for a
    scripted generator. With a GPU `device`, get_inputs runs with that device
    as the default for its factory calls (torch.rand(...) is made there, by
    the device's generator), as kbprof makes a timed call's inputs
    (lib/task/timed_call.h); these are not the bundle's canonical inputs,
    which are the CPU generator's."""
    torch.manual_seed(seed)
    try:
        with default_device(device):
            xs = mod.get_inputs()
    except Exception as e:  # noqa: BLE001
        if gpu_out_of_memory(e):
            raise
        raise TaskError("inputs_error", "get_inputs: " + one_line(e))
    try:
        return list(xs)
    except TypeError:
        raise TaskError("inputs_error", "get_inputs did not return a list")


# ---- input specs -----------------------------------------------------------

def _round(x, digits=6):
    if x == 0 or not math.isfinite(x):
        return float(x)
    return float(f"{x:.{digits}g}")


def describe_input(i, x):
    """The recorded spec of one input (docs/task-format.md "inputs")."""
    if isinstance(x, bool):
        return {"kind": "bool", "value": x}
    if isinstance(x, int):
        return {"kind": "int", "value": x}
    if isinstance(x, float):
        if not math.isfinite(x):
            raise TaskError("spec_error", f"input {i} is the float {x!r}")
        return {"kind": "float", "value": x}
    if not isinstance(x, torch.Tensor):
        raise TaskError("spec_error", f"input {i} is a {type(x).__name__}; only tensors and int/float/bool "
                        "scalars can be described")
    if x.dtype not in DTYPE_NAMES:
        raise TaskError("spec_error", f"input {i} has dtype {x.dtype}, not supported")
    t = x.detach().cpu()
    d = {"kind": "tensor", "dtype": DTYPE_NAMES[x.dtype], "shape": list(x.shape)}
    n = t.numel()
    if n == 0:
        d.update(distribution="constant", params={"value": 0.0}, observed={})
        return d
    if x.dtype == torch.bool:
        p = t.double().mean().item()
        d.update(distribution="bernoulli", params={"p": _round(p, 3)}, observed={"true_fraction": _round(p)})
        return d
    # Range over every element; moments over at most ~1M evenly spaced ones.
    flat = t.reshape(-1)
    mn, mx = flat.min().double().item(), flat.max().double().item()
    v = flat[:: max(1, n // (1 << 20))].double()
    n = v.numel()
    # A handful of integral values ({-1, 1} targets, class ids kept as
    # floats, a sparse set of ints): draw from exactly those values.
    if (math.isfinite(mn) and math.isfinite(mx) and bool((v == v.round()).all())
            and torch.unique(v).numel() <= 16
            and bool((flat == flat.round()).all() if x.dtype.is_floating_point else True)):
        values = torch.unique(flat).double()
        contiguous = values.numel() == int(mx - mn) + 1
        if 1 < values.numel() <= 16 and (x.dtype.is_floating_point or not contiguous):
            d.update(distribution="choice", params={"values": [float(u) for u in values.tolist()]},
                     observed={"min": _round(mn), "max": _round(mx), "distinct": int(values.numel())})
            return d
    if not x.dtype.is_floating_point:
        obs = {"min": int(mn), "max": int(mx)}
        if mn == mx:
            d.update(distribution="constant", params={"value": float(mn)}, observed=obs)
        else:
            d.update(distribution="randint", params={"low": int(mn), "high": int(mx) + 1}, observed=obs)
        return d
    if not (math.isfinite(mn) and math.isfinite(mx)):
        raise TaskError("spec_error", f"input {i} holds inf or NaN")
    mean = v.mean().item()
    std = v.std().item() if n > 1 else 0.0
    obs = {"min": _round(mn), "max": _round(mx), "mean": _round(mean), "std": _round(std)}
    if mn == mx:
        d.update(distribution="constant", params={"value": mn}, observed=obs)
        return d
    kurt = (((v - mean) / std) ** 4).mean().item() - 3.0 if std > 0 and n >= 64 else 0.0
    obs["excess_kurtosis"] = _round(kurt, 3)
    if mn >= 0.0 and mx <= 1.0:
        d.update(distribution="uniform", params={"low": 0.0, "high": 1.0})
    elif mn >= 0.0 or kurt < -0.9:
        # Non-negative (log, sqrt inputs) or flat (uniform): keep the range.
        d.update(distribution="uniform", params={"low": _round(mn), "high": _round(mx)})
    elif abs(mean) < 0.1 and abs(std - 1.0) < 0.1:
        d.update(distribution="normal", params={"mean": 0.0, "std": 1.0})
    else:
        d.update(distribution="normal", params={"mean": _round(mean), "std": _round(std)})
    d["observed"] = obs
    return d


def make_spec_inputs(specs, seed, device="cpu"):
    """The inputs a spec describes for `seed`, made on `device` by a generator
    of that device seeded with `seed` (on the CPU, the bundle's canonical
    inputs; on a GPU, what kbprof's timed calls draw). Keep in step with
    specTensor() in lib/task/task.cpp."""
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    out = []
    for s in specs:
        kind = s["kind"]
        if kind == "int":
            out.append(int(s["value"]))
            continue
        if kind == "float":
            out.append(float(s["value"]))
            continue
        if kind == "bool":
            out.append(bool(s["value"]))
            continue
        dtype = DTYPES[s["dtype"]]
        draw = torch.float64 if dtype == torch.float64 else torch.float32
        shape = s["shape"]
        p = s["params"]
        dist = s["distribution"]
        if dist == "normal":
            t = torch.randn(shape, generator=gen, dtype=draw, device=device)
            if p["std"] != 1.0:
                t.mul_(p["std"])
            if p["mean"] != 0.0:
                t.add_(p["mean"])
        elif dist == "uniform":
            t = torch.rand(shape, generator=gen, dtype=draw, device=device)
            if p["high"] - p["low"] != 1.0:
                t.mul_(p["high"] - p["low"])
            if p["low"] != 0.0:
                t.add_(p["low"])
        elif dist == "randint":
            t = torch.randint(int(p["low"]), int(p["high"]), shape, generator=gen, dtype=torch.int64,
                              device=device)
        elif dist == "choice":
            values = torch.tensor(p["values"], dtype=torch.float64, device=device)
            idx = torch.randint(0, values.numel(), shape, generator=gen, dtype=torch.int64, device=device)
            t = values[idx]
        elif dist == "bernoulli":
            t = torch.rand(shape, generator=gen, dtype=torch.float32, device=device).lt(p["p"])
        elif dist == "constant":
            t = torch.full(shape, p["value"], dtype=draw if dtype.is_floating_point else torch.float64,
                           device=device)
        else:
            raise ValueError("unknown distribution " + dist)
        out.append(t.to(dtype))
    return out


# ---- scripted get_inputs ---------------------------------------------------

def _literal(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return not (isinstance(v, float) and not math.isfinite(v))
    if isinstance(v, (tuple, list)):
        return all(_literal(x) for x in v)
    return False


class _Inline(ast.NodeTransformer):
    """Replaces module-level constants read by get_inputs with literals
    (TorchScript does not take closed-over globals)."""

    def __init__(self, values, local):
        self.values = values
        self.local = local

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id not in self.local and node.id in self.values:
            return ast.copy_location(ast.parse(repr(self.values[node.id]), mode="eval").body, node)
        return node


def script_get_inputs(mod, tmpdir):
    """get_inputs as TorchScript, or (None, reason)."""
    tree = ast.parse(mod.__kb_source__)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if fn is None:
        return None, "get_inputs is not a plain function in model.py"
    local = {a.arg for a in fn.args.args}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            local.add(n.id)
    values = {k: v for k, v in vars(mod).items() if not k.startswith("__") and _literal(v)}
    fn = _Inline(values, local).visit(fn)
    fn.returns = ast.parse("List[torch.Tensor]", mode="eval").body
    ast.fix_missing_locations(fn)
    src = ast.unparse(fn)
    path = os.path.join(tmpdir, f"kb_get_inputs_{_counter[0]}.py")
    with open(path, "w") as f:
        f.write(src + "\n")
    ns = dict(vars(mod))
    ns["List"] = __import__("typing").List
    try:
        exec(compile(src, path, "exec"), ns)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.jit.script(ns["get_inputs"]), None
    except Exception as e:  # noqa: BLE001
        return None, one_line(e)


def place_on(fn, device):
    """A copy of the scripted get_inputs `fn` whose every op with a `device`
    argument (torch.rand, torch.zeros, .to, ...) gets `device` instead: the
    rewrite kbprof's CallInputs makes in C++ (lib/task/timed_call.cpp,
    placeOn), so that the program makes its tensors on the GPU with the
    device's generator."""
    graph = fn.graph.copy()
    torch._C._jit_pass_inline(graph)
    device = torch.device(device)

    def walk(block):
        for node in block.nodes():
            for inner in node.blocks():
                walk(inner)
            schema = node.schema()
            if schema == "(no schema)":
                continue
            names = [a.name for a in torch._C.parse_schema(schema).arguments]
            if "device" not in names:
                continue
            at = names.index("device")
            if at >= len(list(node.inputs())):
                continue
            with graph.insert_point_guard(node):
                const = graph.insertConstant(device)
            node.replaceInput(at, const)

    walk(graph)
    _counter[0] += 1
    return torch._C._create_function_from_graph(f"kb_get_inputs_on_{device.type}_{_counter[0]}", graph)


# ---- outputs and comparison ------------------------------------------------

def flatten_outputs(out, where="forward"):
    """Tensors of a forward() result in order; TaskError for anything else."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        flat = []
        for o in out:
            flat.extend(flatten_outputs(o, where))
        if not flat:
            raise TaskError("non_tensor_output", f"{where} returned an empty {type(out).__name__}")
        return flat
    raise TaskError("non_tensor_output", f"{where} returned a {type(out).__name__}, not a tensor or tuple of tensors")


_CHUNK = 1 << 24  # elements compared at a time (bounded memory for GB-sized outputs)


def _chunks(x, y):
    """Matching float64 chunks of x and y, on x's device: comparing two
    GB-sized CUDA outputs stays on the GPU (copying them to the host and
    converting there took ~17 s a task with 12 workers on the H200)."""
    x = x.detach().reshape(-1)
    y = y.detach().reshape(-1)
    for i in range(0, x.numel(), _CHUNK):
        yield x[i:i + _CHUNK].double(), y[i:i + _CHUNK].to(x.device).double()


def max_abs_diff(a, b):
    """Largest |a-b| over matching outputs; inf on a shape/dtype/count
    mismatch, nan when NaNs do not line up."""
    if len(a) != len(b):
        return math.inf
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return math.inf
        for xc, yc in _chunks(x, y):
            nx = xc.isnan()
            if not torch.equal(nx, yc.isnan()):
                return math.nan
            d = (xc - yc).abs().masked_fill(nx, 0.0).masked_fill(xc == yc, 0.0)
            if d.isnan().any():
                return math.nan
            if d.numel():
                worst = max(worst, d.max().item())
    return worst


def close(a, b, atol=1e-5, rtol=1e-5):
    """Same count, shapes and dtypes, and |a-b| <= atol + rtol*|b| (NaNs at
    the same places count as equal); atol = rtol = 0 means bitwise equal."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if torch.equal(x, y):
            continue
        for xc, yc in _chunks(x, y):
            if not torch.allclose(xc, yc, atol=atol, rtol=rtol, equal_nan=True):
                return False
    return True


def to_device(xs, device):
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]


def bundle_inputs(mod, task, seed, device="cpu", get_inputs=None, draw_on="cpu"):
    """The inputs a bundle's generator makes for `seed`, made the Python way,
    on `device`: get_inputs() itself for a scripted generator (through
    `get_inputs(seed)` when given: a caller's cache or placement), the spec
    otherwise, drawn by a generator of `draw_on`. By default the canonical
    values (the CPU generator's, then copied)."""
    if task["generator"] == "scripted":
        xs = get_inputs(seed) if get_inputs else python_inputs(mod, seed)
    else:
        xs = make_spec_inputs(task["inputs"], seed, draw_on)
    return to_device(xs, device)


def drawn_inputs(mod, task, seed, device):
    """Inputs of the bundle's kind for `seed`, drawn on `device` (get_inputs()
    with the device as its factory calls' default, or the spec by a
    generator of the device; on the CPU these are the canonical inputs). For
    checks that need inputs the task takes, not the canonical values, such as
    a baseline's export and its comparison with eager: KernelBench's gigabyte
    inputs take the CPU's generator seconds, a GPU's milliseconds. A
    get_inputs that cannot run with the GPU as its default runs on the CPU."""
    def get_inputs(s):
        try:
            return python_inputs(mod, s, device)
        except TaskError:
            return python_inputs(mod, s)

    return bundle_inputs(mod, task, seed, device, get_inputs, draw_on=device)


def read_task(bundle):
    with open(os.path.join(bundle, "task.json")) as f:
        return json.load(f)


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def emit(doc):
    """One result line on stdout for the C++ driver."""
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def internal_error(e):
    return TaskError("internal_error", one_line(e) + " | " + traceback.format_exc().splitlines()[-3].strip())


def new_tmpdir():
    return tempfile.mkdtemp(prefix="kbtask-")
