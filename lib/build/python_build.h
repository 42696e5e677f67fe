// The build stage's part for Python-format solutions (python_build.cpp).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "build/build.h"

namespace kb::build {

// The trusted adapter library (lib/pymodel): $KB_PYMODEL_ADAPTER, the
// installed libexec copy, or the build tree's; empty when there is none.
std::filesystem::path pythonAdapterPath();

// Why this Python solution cannot be built yet ("" when it can): a
// workspace's binding.cpp.
std::string pythonUnsupported(const solution::Solution& solution);

// One torch extension a solution builds with load_inline, as
// scripts/pycheck.py --extract read it from the code (never run): the
// arguments torch's load_inline takes, literal.
struct InlineExtension {
  std::string name;                    // the module's name (a Python identifier)
  std::string file;                    // where the call is, for diagnostics
  int line = 0;
  std::vector<std::string> cpp_sources, cuda_sources;
  Json functions;                      // null, a list of names or {name: docstring}
  std::vector<std::string> extra_cflags, extra_cuda_cflags, extra_ldflags;
};

struct ExtensionList {
  std::vector<InlineExtension> extensions;
  std::string problem;  // the reader could not run: infra_error
};
ExtensionList readInlineExtensions(const solution::Solution& solution);

// The two generated sources of an extension, as load_inline writes them:
// main.cpp (torch/extension.h, the cpp sources, the pybind11 module of
// `functions`) and cuda.cu ("" when there are no CUDA sources).
std::string extensionMainCpp(const InlineExtension& e);
std::string extensionCudaSource(const InlineExtension& e);

// "" when every extra flag of `e` is one the build allows, else the first
// that is not, with why (flags reach the compiler's command line: only
// optimisation, warnings, macros, standards and a few nvcc switches).
std::string refusedExtensionFlag(const InlineExtension& e);

// The compile and link flags of a torch extension (torch's and Python's
// headers, the extension's name, torch's libraries), from this build's
// torch; empty when this build has none.
struct TorchExtensionFlags {
  std::vector<std::string> compile;  // -D and -isystem flags, for g++ and nvcc
  std::vector<std::string> link;     // -L, -rpath and -l flags
  bool available = false;
};
TorchExtensionFlags torchExtensionFlags(bool cuda);

struct PythonStage {
  bool ok = false;
  std::string problem;  // an infrastructure problem (no adapter, no task, disk)
};

// Writes the adapter (as solution.so), the solution's .py files and
// pymodel.json (the entry, the task's init, and `extensions`: each built
// extension's name -> its library, relative to `work`) into `work`.
PythonStage stagePython(const solution::Solution& solution, const BuildOptions& options,
                        const std::filesystem::path& work, const std::map<std::string, std::string>& extensions);

// The "init" object of TASK_DIR/task.json (the seed and arguments the task's
// Model was built with; docs/task-format.md); null when there is none.
Json taskInitOf(const std::filesystem::path& task_dir);

// What the cache key adds for a Python solution: the task's init and the
// adapter's content.
std::string pythonKeyFields(const BuildOptions& options);

}  // namespace kb::build
