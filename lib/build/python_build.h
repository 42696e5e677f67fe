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

// The CUDA Agent paper's workspace extension, as its utils/compile.py
// builds it (torch.utils.cpp_extension.load over binding.cpp and kernels/,
// Solution::workspaceSources): the module name model_new.py imports and the
// flags, fixed by the paper's harness (the candidate gives none).
struct WorkspaceExtension {
  std::string name = "cuda_extension";
  std::vector<std::string> cflags = {"-O3", "-std=c++17"};
  std::vector<std::string> cuda_cflags = {"-O3", "--use_fast_math"};
};
inline WorkspaceExtension workspaceExtension() { return {}; }

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
  // Where those headers are (torch's folder, Python's include folder): an
  // extension may read files there.
  std::vector<std::filesystem::path> include_roots;
  bool available = false;
};
TorchExtensionFlags torchExtensionFlags(bool cuda);

// H when the first line of `text` that is not blank or a whole-line //
// comment is exactly `#include <H>`; else "" (also where a line before it
// or it goes on to the next line ends in a backslash). Forcing H in front of
// such a unit (g++ -include, which takes a precompiled H.gch) compiles the
// same text: the unit's own include of H is then a no-op.
std::string firstInclude(const std::string& text);

// The files of a make-style dependency list, as g++ and nvcc write it with
// -MD -MF (the target, a colon, then every file read, backslash-continued,
// spaces in names escaped).
std::vector<std::string> dependencyList(const std::string& text);

// Why the compile that wrote the dependency list `depfile` read what it
// must not ("reads /etc/passwd, outside ..."): a file (relative names are
// relative to `cwd`) outside every folder of `allowed` (canonical paths),
// or no list at all; "" when every file is inside. An extension's sources
// are the candidate's: a host file they include must not reach a
// compiler's diagnostics or the library.
std::string includeOutside(const std::filesystem::path& depfile, const std::filesystem::path& cwd,
                           const std::vector<std::filesystem::path>& allowed);

struct PythonStage {
  bool ok = false;
  std::string problem;  // an infrastructure problem (no adapter, no task, disk)
};

// Writes the adapter (as solution.so), the solution's .py files and
// pymodel.json (the entry, the task's init, `extensions`: each built
// extension's name -> its library, relative to `work`, and
// `failed_extensions`: each load_inline extension the compiler refused ->
// its first error line, which that load_inline raises) into `work`.
PythonStage stagePython(const solution::Solution& solution, const BuildOptions& options,
                        const std::filesystem::path& work, const std::map<std::string, std::string>& extensions,
                        const std::map<std::string, std::string>& failed = {});

// The "init" object of TASK_DIR/task.json (the seed and arguments the task's
// Model was built with; docs/task-format.md); null when there is none.
Json taskInitOf(const std::filesystem::path& task_dir);

// What the cache key adds for a Python solution: the task's init, the
// adapter's content, how its extensions are built (the workspace's flags
// included) and the torch they are built against (torch/version.py).
std::string pythonKeyFields(const BuildOptions& options);

}  // namespace kb::build
