// The build stage's part for Python-format solutions (python_build.cpp).
#pragma once

#include <filesystem>
#include <string>

#include "build/build.h"

namespace kb::build {

// The trusted adapter library (lib/pymodel): $KB_PYMODEL_ADAPTER, the
// installed libexec copy, or the build tree's; empty when there is none.
std::filesystem::path pythonAdapterPath();

// Why this Python solution cannot be built yet ("" when it can): a
// workspace's binding.cpp, or load_inline / cpp_extension in its Python.
std::string pythonUnsupported(const solution::Solution& solution);

struct PythonStage {
  bool ok = false;
  std::string problem;  // an infrastructure problem (no adapter, no task, disk)
};

// Writes the adapter (as solution.so), the solution's .py files and
// pymodel.json into `work`.
PythonStage stagePython(const solution::Solution& solution, const BuildOptions& options,
                        const std::filesystem::path& work);

// The "init" object of TASK_DIR/task.json (the seed and arguments the task's
// Model was built with; docs/task-format.md); null when there is none.
Json taskInitOf(const std::filesystem::path& task_dir);

// What the cache key adds for a Python solution: the task's init and the
// adapter's content.
std::string pythonKeyFields(const BuildOptions& options);

}  // namespace kb::build
