// A Python-format solution (KernelBench's ModelNew or the CUDA Agent
// paper's workspace, docs/solution-format.md) as a kb_api solution: kb_init
// starts an embedded CPython, runs the solution's model_new.py (its torch
// extensions, built by the build stage, answer load_inline and import) and
// builds ModelNew with the reference's weights;
// kb_forward hands the harness's inputs to ModelNew.forward through DLPack
// (no copy) and copies what it returns into harness-allocated outputs.
//
// This library is trusted code, copied in by the build stage next to the
// solution's files (model_new.py, pymodel.json). It runs inside the
// confined candidate worker, after "hello", in the same process as the
// candidate's Python: nothing here decides a verdict. The copy into the
// harness's outputs is what makes every result a plain dense tensor the
// reference worker checks, whatever object ModelNew returned (a lazy
// subclass is materialised inside the timed call, or fails there).
#include <Python.h>  // first: it sets feature macros

#include <dlfcn.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/DLConvertor.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>

#include "kb/solution.h"
#include "verify/dtype.h"

namespace {

namespace fs = std::filesystem;

// The harness-side glue, run once in the embedded interpreter. It is as
// reachable by the candidate's Python as anything in this process; it holds
// no verdict.
constexpr const char* kGlue = R"PY(
import contextlib, json, sys, traceback, types
import torch
import torch.utils.dlpack

def load(folder, params, device):
    # UTF-8, as Python reads source files, whatever the worker's locale.
    with open(folder + "/pymodel.json", encoding="utf-8") as f:
        cfg = json.load(f)
    path = folder + "/" + cfg["entry"]
    with open(path, encoding="utf-8") as f:
        source = f.read()
    # The torch extensions the build stage built (pymodel.json "extensions":
    # name -> library): the candidate never runs a compiler. load_inline
    # answers with the one built from the same call's literal arguments; an
    # import of a built name (a workspace's `import cuda_extension`) finds
    # its library, and only those names: nothing else is on sys.path.
    import importlib.machinery, importlib.util
    import torch.utils.cpp_extension
    built = cfg.get("extensions", {})
    # Extensions the compiler refused (build.h CompileStep::fallback): their
    # load_inline raises as torch's does when a build fails, so a solution's
    # own try/except decides, as under KernelBench's harness.
    failed = cfg.get("failed_extensions", {})
    def built_spec(name):
        lib = folder + "/" + built[name]
        return importlib.util.spec_from_file_location(
            name, lib, loader=importlib.machinery.ExtensionFileLoader(name, lib))
    def load_inline(name, *args, **kwargs):
        if name in failed:
            raise RuntimeError(f"Error building extension '{name}': {failed[name]}")
        if name not in built:
            raise RuntimeError(f"load_inline({name!r}): the build stage built no extension of that name")
        module = importlib.util.module_from_spec(built_spec(name))
        module.__spec__.loader.exec_module(module)
        return module
    torch.utils.cpp_extension.load_inline = load_inline
    class BuiltExtensions:
        @staticmethod
        def find_spec(name, path=None, target=None):
            return built_spec(name) if name in built else None
    sys.meta_path.insert(0, BuiltExtensions)
    mod = types.ModuleType("model_new")
    mod.__file__ = path
    sys.modules["model_new"] = mod
    exec(compile(source, cfg["entry"], "exec"), mod.__dict__)
    cls = getattr(mod, "ModelNew", None)
    if not isinstance(cls, type):
        raise RuntimeError(cfg["entry"] + " defines no class ModelNew")
    # As the task's capture built Model: the same seed before construction,
    # then every parameter or buffer the reference has under the same name
    # and shape is the reference's own value.
    if not cfg.get("init"):
        raise RuntimeError("built without a task: ModelNew's init arguments are the task's")
    torch.manual_seed(int(cfg["init"]["seed"]))
    model = cls(*cfg["init"]["args"])
    model = model.to(torch.device(device))
    loaded = []
    with torch.no_grad():
        for name, t in model.state_dict().items():
            ref = params.get(name)
            if ref is not None and tuple(ref.shape) == tuple(t.shape):
                t.copy_(ref)
                loaded.append(name)
    model.eval()
    return model

# kb_dtype's codes (include/kb/solution.h).
KB_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.float64: 3, torch.int8: 4,
             torch.uint8: 5, torch.int16: 6, torch.int32: 7, torch.int64: 8, torch.bool: 9}

def stream_of(stream):
    return torch.cuda.stream(torch.cuda.ExternalStream(stream)) if stream else contextlib.nullcontext()

def forward(model, inputs, stream):
    """ModelNew's results and, for each, (sizes, kb_dtype, on_cuda).

    KernelBench's extensions launch with <<<grid, block>>>: on the legacy
    default stream, where KernelBench runs everything. The call's stream is
    the harness's (non-blocking, so not ordered with it by CUDA), so the
    legacy stream waits for the call's start and the call's stream for the
    legacy stream's work before the outputs are copied and the call ends:
    that work is inside the call's window, timed, and the run-time
    provenance accepts it there (docs/kbprof.md)."""
    with torch.no_grad(), stream_of(stream):
        legacy = torch.cuda.default_stream() if stream else None
        if legacy is not None:
            legacy.wait_stream(torch.cuda.current_stream())
        try:
            out = model(*inputs)
        finally:
            if legacy is not None:
                torch.cuda.current_stream().wait_stream(legacy)
    if not isinstance(out, (tuple, list)):
        out = (out,)
    shapes = []
    for i, o in enumerate(out):
        if type(o) is not torch.Tensor:
            raise TypeError(f"output {i} is a {type(o).__module__}.{type(o).__qualname__}, not a plain torch.Tensor")
        if o.layout != torch.strided or o.dtype not in KB_DTYPES:
            raise TypeError(f"output {i} is a {o.layout} tensor of {o.dtype}, which the harness does not carry")
        shapes.append((list(o.shape), KB_DTYPES[o.dtype], o.is_cuda))
    return list(out), shapes

def copy_out(targets, results, stream):
    """Each result into the harness's output, on the call's stream."""
    with torch.no_grad(), stream_of(stream):
        for target, result in zip(targets, results):
            torch.utils.dlpack.from_dlpack(target).copy_(result)

def describe(exc):
    """One line: the exception, and the innermost line of the solution's code."""
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if not frame.filename.startswith("<") and "site-packages" not in frame.filename:
            where = f" ({frame.filename}:{frame.lineno})"
            break
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    return (text[-1] if text else type(exc).__name__) + where
)PY";

// torch's process-wide settings that change what an operation computes or
// how it is chosen (precision, algorithm search, determinism), the CPU
// thread counts the eager baseline was timed with, and flush-to-zero, as
// (name, value): read before ModelNew's module runs and compared after its
// construction and after every forward (docs/solution-format.md, "Run-time
// checks"). Read here in C++: what ModelNew's Python can reach it can
// rewrite, and a check kept in the glue's Python was emptied through
// sys.modules. A TF32 GEMM in an fp32 task is a precision cheat, and
// cudnn.benchmark's search is timed work that happens outside the calls.
using TorchSettings = std::vector<std::pair<std::string, std::string>>;

// The settings that decide what a torch operation computes or which
// algorithm it takes, as (name, reader): the snapshot below and the
// per-operation watch (OpWatch) read the same list.
struct PrecisionSetting {
  const char* name;
  long long (*read)(at::Context&);
};
constexpr PrecisionSetting kPrecisionSettings[] = {
    {"torch.backends.cuda.matmul.allow_tf32", [](at::Context& c) -> long long { return c.allowTF32CuBLAS(); }},
    {"torch.backends.cudnn.allow_tf32", [](at::Context& c) -> long long { return c.allowTF32CuDNN(); }},
    {"torch.backends.cudnn.benchmark", [](at::Context& c) -> long long { return c.benchmarkCuDNN(); }},
    {"torch.backends.cudnn.deterministic", [](at::Context& c) -> long long { return c.deterministicCuDNN(); }},
    {"torch.backends.cudnn.enabled", [](at::Context& c) -> long long { return c.userEnabledCuDNN(); }},
    {"torch.are_deterministic_algorithms_enabled()",
     [](at::Context& c) -> long long { return c.deterministicAlgorithms(); }},
    {"torch.get_float32_matmul_precision()",
     [](at::Context& c) -> long long { return static_cast<long long>(c.float32MatmulPrecision()); }},
    {"allow_fp16_reduced_precision_reduction",
     [](at::Context& c) -> long long { return static_cast<long long>(c.allowFP16ReductionCuBLAS()); }},
    {"allow_bf16_reduced_precision_reduction",
     [](at::Context& c) -> long long { return static_cast<long long>(c.allowBF16ReductionCuBLAS()); }},
    // Not a precision: more CPU threads for the candidate's operations than
    // the eager baseline had, set and put back inside one forward (a review
    // by attack, 2026-12-07), is a speed-up bought from the machine.
    {"torch.get_num_threads()", [](at::Context&) -> long long { return at::get_num_threads(); }},
};
constexpr size_t kPrecisionSettingCount = std::size(kPrecisionSettings);

TorchSettings torchSettings() {
  at::Context& c = at::globalContext();
  TorchSettings s;
  auto put = [&s](std::string key, const auto& read) {
    try {
      s.emplace_back(std::move(key), std::to_string(static_cast<long long>(read())));
    } catch (const std::exception&) {  // torch refuses to read a mix of its old and new spellings
      s.emplace_back(std::move(key), "unreadable");
    }
  };
  for (const PrecisionSetting& p : kPrecisionSettings) put(p.name, [&] { return p.read(c); });
  using B = at::Float32Backend;
  using O = at::Float32Op;
  for (auto [backend, bname] : {std::pair{B::GENERIC, "generic"}, {B::CUDA, "cuda"}, {B::MKLDNN, "mkldnn"}})
    for (auto [op, oname] : {std::pair{O::ALL, "all"}, {O::CONV, "conv"}, {O::RNN, "rnn"}, {O::MATMUL, "matmul"}})
      put(std::string("fp32_precision[") + bname + "." + oname + "]",
          [&, backend = backend, op = op] { return c.float32Precision(backend, op); });
  put("torch.get_num_interop_threads()", [] { return at::get_num_interop_threads(); });
#if defined(__x86_64__)
  put("flush denormals (MXCSR FTZ/DAZ)", [] { return _mm_getcsr() & 0x8040u; });  // torch.set_flush_denormal
#endif
  return s;
}

// The first setting that differs from `before`, as a refusal; empty if none.
std::string changedSetting(const TorchSettings& before, const char* when) {
  TorchSettings now = torchSettings();
  for (size_t i = 0; i < before.size() && i < now.size(); ++i)
    if (now[i].second != before[i].second)
      return "ModelNew changed torch's process-wide setting " + before[i].first + " from " + before[i].second +
             " to " + now[i].second + " (" + when + "): refused, settings stay as the harness set them";
  return {};
}

// The settings above that decide what a torch operation computes, read
// cheaply (no strings) at every operation ModelNew's forward runs: a
// setting switched on around one GEMM and back off before forward returns
// is the same before and after the call, and is seen only at the GEMM.
using OpSettings = std::array<long long, kPrecisionSettingCount>;

OpSettings opSettings() {
  at::Context& c = at::globalContext();
  OpSettings s{};
  for (size_t i = 0; i < kPrecisionSettingCount; ++i) {
    try {
      s[i] = kPrecisionSettings[i].read(c);
    } catch (const std::exception&) {  // torch refuses to read a mix of its old and new spellings
      s[i] = -1;
    }
  }
  return s;
}

// Watches every torch operation (a global RecordFunction callback) while
// ModelNew's forward runs, for a setting that differs from the harness's.
// RecordFunction takes a plain function pointer, so the one watch of this
// process is reached through a file-level pointer, set once by kb_init.
struct OpWatch {
  OpSettings expected;
  std::atomic<bool> armed{false};
  std::atomic<bool> changed{false};
  std::atomic<unsigned long long> seen{0};  // operations seen while armed
};
OpWatch* op_watch = nullptr;

std::unique_ptr<at::ObserverContext> onOperation(const at::RecordFunction&) {
  OpWatch* w = op_watch;
  if (!w || !w->armed.load(std::memory_order_relaxed)) return nullptr;
  w->seen.fetch_add(1, std::memory_order_relaxed);
  if (opSettings() != w->expected) w->changed.store(true, std::memory_order_relaxed);
  return nullptr;
}

OpWatch& startOpWatch() {
  static std::once_flag once;
  std::call_once(once, [] {
    op_watch = new OpWatch;  // lives as long as the process, as the callback does
    op_watch->expected = opSettings();
    at::addGlobalCallback(at::RecordFunctionCallback(onOperation).needsInputs(false));
  });
  return *op_watch;
}

// After a forward: a setting seen changed at one of its operations, or the
// watch itself switched off (an operation of ours, run armed, not seen), as
// a refusal; empty if neither.
std::string opWatchFinding(OpWatch& w) {
  const unsigned long long before = w.seen.load();
  (void)at::zeros({1});  // a probe: the watch must see it
  const bool live = w.seen.load() > before;
  w.armed = false;
  if (w.changed.exchange(false))
    return "ModelNew changed one of torch's process-wide precision, algorithm or thread settings during forward (seen at "
           "a torch operation; a setting put back before forward returned is seen there too): refused, settings "
           "stay as the harness set them";
  if (!live)
    return "torch's operation callbacks were switched off during forward (the harness watches its settings "
           "through them): refused";
  return {};
}

// The Python threads alive in the interpreter (its thread states; torch's
// own native pools have none). Read with the GIL held, when a thread state
// is neither made nor removed under us.
int pythonThreads() {
  int n = 0;
  for (PyThreadState* t = PyInterpreterState_ThreadHead(PyInterpreterState_Main()); t; t = PyThreadState_Next(t)) ++n;
  return n;
}

// A Python thread that ModelNew started and left running, as a refusal:
// work it does after the call returns is outside the timed call (and the
// output was copied out already); empty if there is none.
std::string leftThreads(int before, const char* when) {
  int now = pythonThreads();
  if (now <= before) return {};
  return "ModelNew left " + std::to_string(now - before) + " Python thread(s) running (" + when +
         "): work after the call is outside the timed call; refused";
}

// What kb_init leaves for kb_forward (through set_host_object).
struct PyState {
  PyObject* glue = nullptr;   // the glue module's dict
  PyObject* model = nullptr;  // the ModelNew instance
  bool cuda = false;
  TorchSettings settings;     // as the worker set them, before ModelNew's module ran
  OpWatch* watch = nullptr;   // the settings at each operation of a forward
  int threads = 0;            // Python threads before ModelNew's module ran
};

// The folder this library was copied into (beside model_new.py).
fs::path ownFolder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&ownFolder), &info) == 0 || !info.dli_fname) return {};
  return fs::path(info.dli_fname).parent_path();
}

// site-packages of the torch this process runs: torch/lib/libc10.so's
// grandparent's parent.
fs::path sitePackages() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&c10::GetCPUAllocator), &info) == 0 || !info.dli_fname) return {};
  return fs::path(info.dli_fname).parent_path().parent_path().parent_path();
}

// The pending Python exception as one line (the glue's describe()).
std::string pythonError(PyObject* glue) {
  PyObject *type = nullptr, *exc = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &exc, &tb);
  if (!type) return "unknown Python error";
  PyErr_NormalizeException(&type, &exc, &tb);
  if (tb && exc) PyException_SetTraceback(exc, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  if (!exc) return "unknown Python error";
  std::string text = "Python error";
  PyObject* describe = glue ? PyDict_GetItemString(glue, "describe") : nullptr;
  PyObject* line = describe ? PyObject_CallOneArg(describe, exc) : nullptr;
  if (!line) {
    PyErr_Clear();
    line = PyObject_Str(exc);
  }
  if (line) {
    if (const char* s = PyUnicode_AsUTF8(line)) text = s;
    Py_DECREF(line);
  }
  PyErr_Clear();
  Py_DECREF(exc);
  return text;
}

int32_t fail(const kb_api* api, kb_context* ctx, const std::string& why) {
  api->fail(ctx, why.c_str());
  return 1;
}

at::Tensor viewOf(const kb_tensor& t) {
  auto dtype = kb::verify::scalarTypeOf(t.dtype);
  if (!dtype) throw std::runtime_error("a tensor of unknown dtype");
  std::vector<int64_t> sizes(t.sizes, t.sizes + t.ndim), strides(t.strides, t.strides + t.ndim);
  at::Device device = t.device == KB_CUDA ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(t.device_index))
                                          : at::Device(at::kCPU);
  return at::from_blob(t.data, sizes, strides, at::TensorOptions().dtype(*dtype).device(device));
}

// A DLPack capsule over `t` (torch.utils.dlpack.from_dlpack takes it).
PyObject* capsuleOf(const at::Tensor& t) {
  DLManagedTensor* dl = at::toDLPack(t);
  PyObject* capsule = PyCapsule_New(dl, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {  // never consumed
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      if (m && m->deleter) m->deleter(m);
    }
  });
  if (!capsule && dl->deleter) dl->deleter(dl);
  return capsule;
}

// Starts the interpreter: isolated from the environment, no bytecode
// writes (the worker may write nothing but its work folder), no signal
// handlers (the worker's own stay), torch's site-packages on the path.
std::string startPython() {
  // Extension modules (torch._C) resolve CPython's symbols globally; this
  // library was opened RTLD_LOCAL, so make libpython global first.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) != 0 && info.dli_fname)
    ::dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.write_bytecode = 0;
  config.install_signal_handlers = 0;
  config.site_import = 0;
  config.user_site_directory = 0;
  PyStatus status = PyConfig_SetBytesString(&config, &config.home, KB_PYTHON_HOME);
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status))
    return std::string("cannot start Python: ") + (status.err_msg ? status.err_msg : "unknown");
  PyObject* sys_path = PySys_GetObject("path");  // borrowed
  fs::path site = sitePackages();
  if (!sys_path || site.empty()) return "cannot find torch's site-packages";
  PyObject* entry = PyUnicode_FromString(site.c_str());
  PyList_Append(sys_path, entry);
  Py_DECREF(entry);
  return {};
}

void destroyState(void* p) {
  // The interpreter stays up until the process ends (finalising it with
  // torch loaded is not safe); the references go with it.
  delete static_cast<PyState*>(p);
}

PyObject* pythonValue(const kb_value& v) {
  switch (v.kind) {
    case KB_VALUE_INT: return PyLong_FromLongLong(v.i);
    case KB_VALUE_BOOL: return PyBool_FromLong(v.i != 0);
    case KB_VALUE_FLOAT: return PyFloat_FromDouble(v.f);
    case KB_VALUE_NONE: Py_RETURN_NONE;
    default: return nullptr;
  }
}

}  // namespace

// Called by the worker before it confines itself, from the trusted adapter
// (never the copy beside a candidate's files): starts the interpreter and
// imports what the glue and ModelNew need. Importing torch reads the whole
// site-packages tree and opens files for writing (/dev/null, from optional
// imports), which the confinement would refuse. Returns 0, or 1 with the
// reason in `why`.
extern "C" __attribute__((visibility("default"))) int32_t kb_python_prestart(char* why, size_t size) {
  std::string problem;
  if (!Py_IsInitialized()) problem = startPython();
  if (problem.empty()) {
    PyObject* globals = PyDict_New();
    // What Python would do lazily at the candidate's first CUDA use
    // (torch.cuda's initialisation, the modules the glue reads; no bytecode
    // written) is done here, before confinement. Seen on the H200: a
    // torch-only ModelNew on CUDA was stopped at an unlink the sandbox
    // refuses, in start-up or the first call; the cause is not known yet,
    // and this is a guess at it, not run on a GPU.
    PyObject* ran = PyRun_String("import sys\n"
                                 "sys.dont_write_bytecode = True\n"
                                 "import contextlib, json, traceback, types\n"
                                 "import torch, torch.nn, torch.nn.functional, torch.utils.dlpack\n"
                                 "import importlib.machinery, importlib.util, torch.utils.cpp_extension\n"
                                 "import torch.backends.cudnn, torch.backends.cuda\n"
                                 "if torch.cuda.is_available():\n"
                                 "    torch.cuda.init()\n"
                                 "    torch.cuda.current_stream(); torch.cuda.default_stream()\n",
                                 Py_file_input, globals, globals);
    if (!ran) problem = "importing torch failed: " + pythonError(nullptr);
    Py_XDECREF(ran);
    Py_DECREF(globals);
  }
  if (problem.empty()) return 0;
  std::snprintf(why, size, "%s", problem.c_str());
  return 1;
}

extern "C" __attribute__((visibility("default"))) int32_t kb_init(const kb_api* api, kb_context* ctx) {
  if (!Py_IsInitialized()) {
    std::string problem = startPython();
    if (!problem.empty()) return fail(api, ctx, problem);
  }
  auto state = std::make_unique<PyState>();
  state->cuda = api->device == KB_CUDA;
  state->settings = torchSettings();
  state->threads = pythonThreads();
  state->watch = &startOpWatch();
  // The glue's module is the adapter's alone: not in sys.modules, where an
  // `import _kb_harness` reached its check.
  PyObject* module = PyModule_New("_kb_harness");
  state->glue = module ? PyModule_GetDict(module) : nullptr;
  if (!state->glue) return fail(api, ctx, "cannot create the harness module: " + pythonError(nullptr));
  Py_INCREF(state->glue);
  Py_DECREF(module);
  PyDict_SetItemString(state->glue, "__builtins__", PyEval_GetBuiltins());
  PyObject* ran = PyRun_String(kGlue, Py_file_input, state->glue, state->glue);
  if (!ran) return fail(api, ctx, "the harness glue failed: " + pythonError(state->glue));
  Py_DECREF(ran);

  PyObject* params = PyDict_New();
  int32_t n = api->num_params(ctx);
  for (int32_t i = 0; i < n; ++i) {
    const char* name = api->param_name(ctx, i);
    kb_tensor t{};
    if (!name || api->param(ctx, name, &t) != 0) {
      Py_DECREF(params);
      return 1;
    }
    PyObject* capsule = capsuleOf(viewOf(t));
    PyObject* from = PyImport_ImportModule("torch.utils.dlpack");
    PyObject* tensor = from && capsule ? PyObject_CallMethod(from, "from_dlpack", "O", capsule) : nullptr;
    Py_XDECREF(from);
    Py_XDECREF(capsule);
    if (!tensor) {
      Py_DECREF(params);
      return fail(api, ctx, std::string("cannot hand parameter ") + name + " to Python: " + pythonError(state->glue));
    }
    PyDict_SetItemString(params, name, tensor);
    Py_DECREF(tensor);
  }
  std::string folder = ownFolder().string();
  std::string device = state->cuda ? "cuda" : "cpu";
  PyObject* load = PyDict_GetItemString(state->glue, "load");
  state->model = PyObject_CallFunction(load, "sOs", folder.c_str(), params, device.c_str());
  Py_DECREF(params);
  if (!state->model) return fail(api, ctx, "building ModelNew failed: " + pythonError(state->glue));
  if (std::string changed = changedSetting(state->settings, "while it was built"); !changed.empty())
    return fail(api, ctx, changed);
  if (std::string left = leftThreads(state->threads, "after it was built"); !left.empty()) return fail(api, ctx, left);
  PyState* kept = state.release();
  if (api->set_host_object(ctx, "kb.python", kept, destroyState) != 0) {
    delete kept;
    return 1;
  }
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t kb_forward(const kb_api* api, kb_context* ctx) {
  auto* state = static_cast<PyState*>(api->host_object(ctx, "kb.python"));
  if (!state) return 1;
  PyObject* from_dlpack = nullptr;
  {
    PyObject* m = PyImport_ImportModule("torch.utils.dlpack");
    from_dlpack = m ? PyObject_GetAttrString(m, "from_dlpack") : nullptr;
    Py_XDECREF(m);
  }
  if (!from_dlpack) return fail(api, ctx, "cannot reach torch.utils.dlpack: " + pythonError(state->glue));
  int32_t n = api->num_inputs(ctx);
  PyObject* inputs = PyList_New(0);
  for (int32_t i = 0; i < n; ++i) {
    kb_value v{};
    if (api->input(ctx, i, &v) != 0) {
      Py_DECREF(inputs);
      Py_DECREF(from_dlpack);
      return 1;
    }
    PyObject* item = nullptr;
    if (v.kind == KB_VALUE_TENSOR) {
      PyObject* capsule = capsuleOf(viewOf(v.tensor));
      item = capsule ? PyObject_CallOneArg(from_dlpack, capsule) : nullptr;
      Py_XDECREF(capsule);
    } else {
      item = pythonValue(v);
    }
    if (!item) {
      Py_DECREF(inputs);
      Py_DECREF(from_dlpack);
      return fail(api, ctx, "cannot hand input " + std::to_string(i) + " to Python: " + pythonError(state->glue));
    }
    PyList_Append(inputs, item);
    Py_DECREF(item);
  }
  Py_DECREF(from_dlpack);
  PyObject* forward = PyDict_GetItemString(state->glue, "forward");
  unsigned long long stream = state->cuda ? reinterpret_cast<uintptr_t>(api->stream(ctx)) : 0;
  state->watch->armed = true;
  PyObject* got = PyObject_CallFunction(forward, "OOK", state->model, inputs, stream);
  Py_DECREF(inputs);
  std::string watched = opWatchFinding(*state->watch);
  if (!got) return fail(api, ctx, "ModelNew.forward: " + pythonError(state->glue));
  if (!watched.empty()) {
    Py_DECREF(got);
    return fail(api, ctx, watched);
  }
  if (std::string changed = changedSetting(state->settings, "in forward"); !changed.empty()) {
    Py_DECREF(got);
    return fail(api, ctx, changed);
  }
  if (std::string left = leftThreads(state->threads, "after forward returned"); !left.empty()) {
    Py_DECREF(got);
    return fail(api, ctx, left);
  }
  PyObject* results = PyTuple_GetItem(got, 0);  // borrowed
  PyObject* shapes = PyTuple_GetItem(got, 1);
  PyObject* targets = PyList_New(0);
  int32_t rc = 0;
  for (Py_ssize_t i = 0; i < PyList_Size(shapes) && rc == 0; ++i) {
    PyObject* sizes_obj = nullptr;
    int dtype = 0, on_cuda = 0;
    if (!PyArg_ParseTuple(PyList_GetItem(shapes, i), "Oip", &sizes_obj, &dtype, &on_cuda)) {
      rc = fail(api, ctx, "reading output " + std::to_string(i) + ": " + pythonError(state->glue));
      break;
    }
    if ((on_cuda != 0) != state->cuda) {
      rc = fail(api, ctx, "output " + std::to_string(i) + " is not on the task's device (" +
                              (state->cuda ? "cuda" : "cpu") + ")");
      break;
    }
    std::vector<int64_t> sizes;
    for (Py_ssize_t d = 0; d < PyList_Size(sizes_obj); ++d) sizes.push_back(PyLong_AsLongLong(PyList_GetItem(sizes_obj, d)));
    kb_tensor out{};
    if (api->alloc_output(ctx, static_cast<int32_t>(i), static_cast<int32_t>(sizes.size()), sizes.data(), dtype,
                          &out) != 0) {
      rc = 1;
      break;
    }
    PyObject* capsule = capsuleOf(viewOf(out));
    if (!capsule) {
      rc = fail(api, ctx, "cannot hand output " + std::to_string(i) + " to Python: " + pythonError(state->glue));
      break;
    }
    PyList_Append(targets, capsule);
    Py_DECREF(capsule);
  }
  if (rc == 0) {
    // A plain dense copy inside the call, on the call's stream: the harness
    // holds values, never the candidate's objects.
    PyObject* copy_out = PyDict_GetItemString(state->glue, "copy_out");
    PyObject* done = PyObject_CallFunction(copy_out, "OOK", targets, results, stream);
    if (!done) rc = fail(api, ctx, "copying ModelNew's outputs: " + pythonError(state->glue));
    Py_XDECREF(done);
  }
  Py_DECREF(targets);
  Py_DECREF(got);
  return rc;
}

// ---------------------------------------------------------------------------
// The Python baselines (docs/kbprof.md "Baselines"): the task's own Model from
// model.py, in eager mode and wrapped in torch.compile, timed by the worker
// (lib/profile/timing.cpp) in its trusted phase, before any candidate code
// is loaded and before confinement. Only the trusted adapter
// (build::pythonAdapterPath) is asked for these; closed (every reference
// dropped, Dynamo reset, the compile cache removed by the worker) before the
// candidate's library is opened, so no candidate can call them.

namespace {

constexpr const char* kBaselineGlue = R"PY(
import contextlib, json, os, sys, time, traceback, types
import torch
import torch.utils.dlpack

models = {}
targets = {}

def stream_of(stream):
    return torch.cuda.stream(torch.cuda.ExternalStream(stream)) if stream else contextlib.nullcontext()

def flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    raise TypeError(f"the reference returned a {type(out).__name__}, not tensors")

def open_baselines(task_dir, params, device, compile, cache_dir, inputs, stream, atol, rtol):
    """Model from model.py under the task's init seed with the reference's
    weights (as kb_init builds ModelNew), in the reference's training mode;
    with `compile`, torch.compile of it, warmed (compiled) here and checked
    against eager on `inputs` at the contract's tolerance."""
    report = {}
    # UTF-8 whatever the worker's locale (LC_ALL=C would read ASCII).
    with open(os.path.join(task_dir, "task.json"), encoding="utf-8") as f:
        task = json.load(f)
    path = os.path.join(task_dir, "model.py")
    with open(path, encoding="utf-8", errors="replace") as f:
        source = f.read()
    mod = types.ModuleType("kb_baseline_model")
    mod.__file__ = path
    exec(compile_source(source, path), mod.__dict__)
    init = task.get("init") or {}
    torch.manual_seed(int(init.get("seed", 0)))
    args = list(mod.get_init_inputs())
    torch.manual_seed(int(init.get("seed", 0)))
    model = mod.Model(*args).to(torch.device(device))
    missing = []
    with torch.no_grad():
        for name, t in model.state_dict().items():
            ref = params.get(name)
            if ref is None or tuple(ref.shape) != tuple(t.shape):
                missing.append(name)
            else:
                t.copy_(ref)
    if missing:
        raise RuntimeError("model.py and reference.pt disagree on " + ", ".join(missing[:5]))
    model.train(bool(task.get("training", model.training)))
    models["eager"] = model
    if not compile:
        return json.dumps(report)
    # Inductor's caches in the worker's folder; its compile in this process
    # (no pool of compile workers): all of it before the confinement.
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache_dir, "triton")
    if atol <= 0 and rtol <= 0:
        # The check scripts/baseline.py makes of AOTInductor's package: the
        # task's tolerance, else 1e-2 (a compiled program reorders
        # reductions; it computes the same function, not the same bits).
        tol = task.get("tolerance") or {}
        atol, rtol = float(tol.get("atol", 1e-2)), float(tol.get("rtol", 1e-2))
    compiled = torch.compile(model)
    t0 = time.time()
    try:
        with torch.no_grad(), stream_of(stream):
            got = [t.clone() for t in flatten(compiled(*inputs))]
            want = flatten(model(*inputs))
        if stream or device.startswith("cuda"):
            torch.cuda.synchronize()
    except Exception as e:
        report["compile_error"] = "torch.compile: " + describe(e)
        return json.dumps(report)
    report["compile_seconds"] = round(time.time() - t0, 3)
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape or g.dtype != w.dtype:
            report["compile_error"] = f"torch.compile's output {tuple(g.shape)} {g.dtype} is not eager's {tuple(w.shape)} {w.dtype}"
            return json.dumps(report)
        if g.is_floating_point() and g.numel():
            d = (g.double() - w.double()).abs()
            worst = max(worst, float(d.nan_to_num(0.0).max()))
            ok = torch.isclose(g.double(), w.double(), atol=atol, rtol=rtol, equal_nan=True).all()
        else:
            ok = torch.equal(g, w)
        if not bool(ok):
            report["compile_error"] = (f"torch.compile's output differs from eager (max abs diff {worst:.3g}, "
                                       f"atol {atol:g}, rtol {rtol:g})")
            return json.dumps(report)
    report["max_abs_diff_vs_eager"] = worst
    models["compile"] = compiled
    return json.dumps(report)

def compile_source(source, path):
    return compile(source, path, "exec")

def call(which, inputs, stream):
    """One forward of a baseline and the copy of its outputs into buffers of
    their own, as the adapter's kb_forward copies ModelNew's into the
    harness's: a Python candidate and these pay the same. Returns the
    outputs' bytes."""
    model = models[which]
    with torch.no_grad(), stream_of(stream):
        out = flatten(model(*inputs))
        kept = targets.get(which)
        if kept is None or len(kept) != len(out):
            kept = targets[which] = [torch.empty_like(o) for o in out]
        for t, o in zip(kept, out):
            t.copy_(o)
    return sum(o.numel() * o.element_size() for o in out)

def close():
    models.clear()
    targets.clear()
    try:
        import torch._dynamo
        torch._dynamo.reset()
    except Exception:
        pass
    import gc
    gc.collect()

def describe(exc):
    """The exception's own lines, without Dynamo's advice on how to see more."""
    text = [l.strip() for l in "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()]
    text = [l for l in text if l and not l.startswith(("Set TORCHDYNAMO_VERBOSE", "For even more developer context"))]
    text = " ".join(text)
    # A compiler's error is at the end of a long command line.
    return (text if len(text) <= 1200 else text[:400] + " ... " + text[-800:]) if text else type(exc).__name__
)PY";

PyObject* baselineGlue = nullptr;  // the baselines' glue module dict (never in sys.modules)

void copyOut(char* buffer, size_t size, const std::string& text) {
  if (buffer && size) std::snprintf(buffer, size, "%s", text.c_str());
}

// The worker's values (c10::IValue) as a Python list: tensors through
// DLPack (no copy), scalars as Python numbers.
PyObject* pythonInputs(const std::vector<c10::IValue>& values, std::string& problem) {
  PyObject* m = PyImport_ImportModule("torch.utils.dlpack");
  PyObject* from_dlpack = m ? PyObject_GetAttrString(m, "from_dlpack") : nullptr;
  Py_XDECREF(m);
  if (!from_dlpack) {
    problem = "cannot reach torch.utils.dlpack: " + pythonError(nullptr);
    return nullptr;
  }
  PyObject* list = PyList_New(0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const c10::IValue& v = values[i];
    PyObject* item = nullptr;
    if (v.isTensor()) {
      PyObject* capsule = capsuleOf(v.toTensor());
      item = capsule ? PyObject_CallOneArg(from_dlpack, capsule) : nullptr;
      Py_XDECREF(capsule);
    } else if (v.isBool()) {
      item = PyBool_FromLong(v.toBool() ? 1 : 0);
    } else if (v.isInt()) {
      item = PyLong_FromLongLong(v.toInt());
    } else if (v.isDouble()) {
      item = PyFloat_FromDouble(v.toDouble());
    } else if (v.isNone()) {
      Py_INCREF(Py_None);
      item = Py_None;
    }
    if (!item) {
      problem = "cannot hand input " + std::to_string(i) + " to Python" +
                (PyErr_Occurred() ? ": " + pythonError(baselineGlue) : std::string(" (a ") + v.tagKind() + ")");
      Py_DECREF(list);
      Py_DECREF(from_dlpack);
      return nullptr;
    }
    PyList_Append(list, item);
    Py_DECREF(item);
  }
  Py_DECREF(from_dlpack);
  return list;
}

}  // namespace

// Builds the Python baselines of the task at `task_dir`: `params` (the
// reference's parameters and buffers, `names[i]` for `tensors[i]`, at::Tensor)
// go into model.py's Model; with `compile`, torch.compile of it is warmed on
// `inputs` (std::vector<c10::IValue>) on `stream` (0: the current one) and
// checked against eager at atol/rtol, its caches under `cache_dir`. Returns 0
// with a JSON report in `report` ({"compile_error": why torch.compile has no
// figure, "compile_seconds", "max_abs_diff_vs_eager"}), or 1 with the reason
// there. C++ types cross here: the worker and this library are built
// together against one LibTorch.
extern "C" __attribute__((visibility("default"))) int32_t kb_python_baselines_open(
    const char* task_dir, int32_t cuda, int32_t compile, const char* cache_dir, const char* const* names,
    const void* tensors, int32_t n_params, const void* inputs, uint64_t stream, double atol, double rtol,
    char* report, size_t size) {
  char why[1024] = {0};
  if (kb_python_prestart(why, sizeof why) != 0) {
    copyOut(report, size, why);
    return 1;
  }
  if (!baselineGlue) {
    PyObject* module = PyModule_New("_kb_baseline");
    PyObject* dict = module ? PyModule_GetDict(module) : nullptr;
    if (dict) {
      Py_INCREF(dict);
      PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins());
      PyObject* ran = PyRun_String(kBaselineGlue, Py_file_input, dict, dict);
      if (!ran) {
        copyOut(report, size, "the baselines' glue failed: " + pythonError(nullptr));
        Py_DECREF(dict);
        Py_XDECREF(module);
        return 1;
      }
      Py_DECREF(ran);
      baselineGlue = dict;
    }
    Py_XDECREF(module);
    if (!baselineGlue) {
      copyOut(report, size, "cannot create the baselines' module: " + pythonError(nullptr));
      return 1;
    }
  }
  const auto* ts = static_cast<const at::Tensor*>(tensors);
  PyObject* params = PyDict_New();
  PyObject* dlpack = PyImport_ImportModule("torch.utils.dlpack");
  for (int32_t i = 0; i < n_params && dlpack; ++i) {
    PyObject* capsule = capsuleOf(ts[i]);
    PyObject* t = capsule ? PyObject_CallMethod(dlpack, "from_dlpack", "O", capsule) : nullptr;
    Py_XDECREF(capsule);
    if (!t) {
      copyOut(report, size, std::string("cannot hand parameter ") + names[i] + " to Python: " + pythonError(baselineGlue));
      Py_DECREF(params);
      Py_DECREF(dlpack);
      return 1;
    }
    PyDict_SetItemString(params, names[i], t);
    Py_DECREF(t);
  }
  Py_XDECREF(dlpack);
  std::string problem;
  PyObject* args = pythonInputs(*static_cast<const std::vector<c10::IValue>*>(inputs), problem);
  if (!args) {
    Py_DECREF(params);
    copyOut(report, size, problem);
    return 1;
  }
  PyObject* open = PyDict_GetItemString(baselineGlue, "open_baselines");
  PyObject* got = PyObject_CallFunction(open, "sOsisOKdd", task_dir, params, cuda ? "cuda" : "cpu", compile ? 1 : 0,
                                        cache_dir, args, static_cast<unsigned long long>(stream), atol, rtol);
  Py_DECREF(params);
  Py_DECREF(args);
  if (!got) {
    copyOut(report, size, "building model.py's Model: " + pythonError(baselineGlue));
    return 1;
  }
  const char* text = PyUnicode_AsUTF8(got);
  copyOut(report, size, text ? text : "{}");
  Py_DECREF(got);
  return 0;
}

// One call of baseline `which` ("eager" or "compile") on `inputs`
// (std::vector<c10::IValue>) on `stream`; `output_bytes` gets its outputs'
// bytes. Returns 0, or 1 with the reason in `why`.
extern "C" __attribute__((visibility("default"))) int32_t kb_python_baseline_call(const char* which, const void* inputs,
                                                                                 uint64_t stream, uint64_t* output_bytes,
                                                                                 char* why, size_t size) {
  if (!baselineGlue) {
    copyOut(why, size, "the Python baselines are not open");
    return 1;
  }
  std::string problem;
  PyObject* args = pythonInputs(*static_cast<const std::vector<c10::IValue>*>(inputs), problem);
  if (!args) {
    copyOut(why, size, problem);
    return 1;
  }
  PyObject* call = PyDict_GetItemString(baselineGlue, "call");
  PyObject* got = PyObject_CallFunction(call, "sOK", which, args, static_cast<unsigned long long>(stream));
  Py_DECREF(args);
  if (!got) {
    copyOut(why, size, std::string(which) + " (Python): " + pythonError(baselineGlue));
    return 1;
  }
  if (output_bytes) *output_bytes = PyLong_AsUnsignedLongLong(got);
  Py_DECREF(got);
  return 0;
}

// Drops the baselines (models, output buffers, Dynamo's compiled code) and
// the glue itself: after this no Python object of theirs is reachable.
extern "C" __attribute__((visibility("default"))) void kb_python_baselines_close() {
  if (!baselineGlue) return;
  if (PyObject* close = PyDict_GetItemString(baselineGlue, "close")) {
    PyObject* done = PyObject_CallNoArgs(close);
    if (!done) PyErr_Clear();
    Py_XDECREF(done);
  }
  PyDict_Clear(baselineGlue);
  Py_DECREF(baselineGlue);
  baselineGlue = nullptr;
  PyGC_Collect();
}
