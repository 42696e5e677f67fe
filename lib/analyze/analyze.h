// The static checker behind `kbcheck static`: parses every source of a
// solution with Clang (CUDA mode, host and device sides) and enforces a
// policy. One public entry point, checkSolution(); the rules live in rules/.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyze/policy.h"
#include "solution/solution.h"

namespace kb::analyze {

// Note: never fails a check (parser-limit says where Clang could not parse).
enum class Severity { Error, Warning, Note };

// One diagnostic, clang style: file:line:col: error: [rule] message.
struct Finding {
  std::string rule;
  Severity severity = Severity::Error;
  std::string file;  // relative to the solution root
  unsigned line = 0;    // 1-based; 0 when the finding is about a whole file
  unsigned column = 0;  // 1-based
  std::string message;
  std::string source_line;  // the text of that line, for display
};

// What later stages (build, profile, reward) want to know about a solution.
struct KernelInfo {
  std::string name;
  std::string file;
  unsigned line = 0;
  bool is_template = false;
};
struct LaunchSite {
  std::string kernel;  // the callee as written (template arguments included)
  std::string file;
  unsigned line = 0, column = 0;
  std::string grid, block, shared_mem, stream;  // source text; "" if defaulted
};
struct LibraryCall {
  std::string library;  // "cuda-runtime", "cuda-driver", "cublas", "cudnn", ...
  std::string function;
  std::string file;
  unsigned line = 0, column = 0;
};
struct Inventory {
  std::vector<KernelInfo> kernels;
  std::vector<LaunchSite> launches;
  std::vector<LibraryCall> library_calls;
};

struct CheckOptions {
  std::filesystem::path cuda_path;          // CUDA toolkit root
  std::string gpu_arch = "sm_90";
  std::filesystem::path interface_include;  // directory holding kb/solution.h
  std::filesystem::path resource_dir;       // Clang's resource directory
  std::filesystem::path cache_dir;          // precompiled headers live here
  unsigned jobs = 0;                        // parallel parses; 0 = all cores

  // Torch-extension sources (a load_inline extension's generated main.cpp
  // and cuda.cu, a workspace's binding.cpp and kernels/): parsed as torch's
  // build compiles them (lib/build/python_build.h), against precompiled
  // headers that add torch's (torch/extension.h; torch/types.h and ATen's
  // CUDA context for .cu), without -fopenmp (g++ builds them without it).
  struct TorchExtension {
    std::vector<std::string> args;       // every parse: torch's and Python's -isystem, torch's -D
    std::vector<std::string> cuda_args;  // .cu parses: nvcc's torch defines (__CUDA_NO_HALF_OPERATORS__, ...)
    std::vector<std::filesystem::path> include_dirs;  // where `include` also accepts headers (torch's)
    // Per source path: -DTORCH_EXTENSION_NAME=..., and the extension's own
    // -D, -U, -O and -std flags (they decide what the preprocessor keeps).
    std::map<std::string, std::vector<std::string>> file_args;
  };
  std::optional<TorchExtension> extension;
};

// CheckOptions filled from the build configuration and the environment
// (KB_CUDA_PATH, KB_CACHE_DIR, XDG_CACHE_HOME).
CheckOptions defaultCheckOptions();

struct StaticResult {
  std::vector<Finding> findings;  // sorted by file, line, column, rule
  Inventory inventory;
  bool parsed = true;                    // false when some source did not parse
  std::vector<std::string> parse_errors; // Clang's own diagnostics, verbatim
  bool infra_failed = false;             // the checker itself could not run
  std::string infra_message;
  bool pch_fallback = false;             // a precompiled header did not load: parsed without it
  unsigned translation_units = 0;        // host and device parses done
  double seconds = 0;

  unsigned errorCount() const;
  unsigned warningCount() const;
};

// Parses and checks every source of `solution` against `policy`.
StaticResult checkSolution(const solution::Solution& solution, const StaticPolicy& policy,
                           const CheckOptions& options);

}  // namespace kb::analyze
