// The build stage of a Python-format solution (docs/solution-format.md):
// nothing is compiled; the cache entry holds the trusted adapter
// (lib/pymodel, copied in as solution.so), the solution's Python files and
// pymodel.json (the entry file and the task's init: the seed and the
// arguments ModelNew is built with). The candidate never runs a compiler:
// a torch extension it would build at import time (load_inline, the
// workspace's binding.cpp) is refused here until the trusted stage builds
// such extensions itself.
#include "build/python_build.h"

#include <unistd.h>

#include "core/error.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/paths.h"

namespace fs = std::filesystem;

namespace kb::build {

fs::path pythonAdapterPath() {
  if (const char* env = std::getenv("KB_PYMODEL_ADAPTER"); env && *env) return env;
  if (fs::path installed = installedHelper("libkb_pymodel.so"); !installed.empty()) return installed;
#ifdef KB_PYMODEL_BUILD_PATH
  if (::access(KB_PYMODEL_BUILD_PATH, R_OK) == 0) return KB_PYMODEL_BUILD_PATH;
#endif
  return {};
}

std::string pythonUnsupported(const solution::Solution& solution) {
  if (solution.format == solution::Format::Workspace)
    return "building a workspace's binding.cpp and kernels/ into a torch extension is not supported yet";
  for (const auto& f : solution.files) {
    if (f.kind != solution::SourceKind::Python) continue;
    std::string text = readFile(f.absolute);
    for (const char* word : {"load_inline", "cpp_extension"})
      if (text.find(word) != std::string::npos)
        return f.path + ": torch extensions built at import time (" + std::string(word) +
               ") are not supported yet: the candidate may not run a compiler, and the trusted build of "
               "load_inline sources is not written yet";
  }
  return {};
}

PythonStage stagePython(const solution::Solution& solution, const BuildOptions& options, const fs::path& work) {
  PythonStage out;
  fs::path adapter = options.python_adapter.empty() ? pythonAdapterPath() : options.python_adapter;
  if (adapter.empty() || !fs::exists(adapter)) {
    out.problem = "this build has no Python adapter (lib/pymodel needs LibTorch and Python's development files)";
    return out;
  }
  if (options.python_init.is_null()) {
    out.problem = "a Python solution needs its task (ModelNew is built with the task's init arguments)";
    return out;
  }
  std::error_code ec;
  fs::copy_file(adapter, work / "solution.so", fs::copy_options::overwrite_existing, ec);
  if (ec) {
    out.problem = "cannot copy the Python adapter: " + ec.message();
    return out;
  }
  for (const auto& f : solution.files) {
    if (f.kind != solution::SourceKind::Python) continue;
    std::string content = readFile(f.absolute);
    if (sha256Hex(content) != f.sha256) {
      out.problem = f.path + " changed after the solution was read; build again";
      return out;
    }
    fs::create_directories((work / f.path).parent_path(), ec);
    writeFileAtomic(work / f.path, content);
  }
  Json config;
  config["entry"] = solution.entry;
  config["init"] = options.python_init;
  writeJsonFile(work / "pymodel.json", config);
  out.ok = true;
  return out;
}

Json taskInitOf(const fs::path& task_dir) {
  if (task_dir.empty() || !fs::exists(task_dir / "task.json")) return nullptr;
  Json task = readJsonFile(task_dir / "task.json");
  return task.contains("init") ? task["init"] : Json();
}

std::string pythonKeyFields(const BuildOptions& options) {
  fs::path adapter = options.python_adapter.empty() ? pythonAdapterPath() : options.python_adapter;
  std::string fields = "python_init=" + options.python_init.dump();
  if (!adapter.empty()) fields += "\nadapter=" + sha256Hex(readFile(adapter));
  return fields;
}

}  // namespace kb::build
