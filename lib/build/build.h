// `kbcheck build`: a solution directory compiled into a loadable shared
// object (solution.so), cached by a content key, so that an unchanged
// solution is never rebuilt.
//
//   .cu   nvcc -arch=<arch> (host side by the host compiler, -ccbin)
//   .cpp  the host compiler (g++), with the CUDA headers on the path
//   link  the host compiler -shared -z defs, against cudart, cuBLAS,
//         cuBLASLt (and cuDNN where the toolkit has it) for CUDA; nothing
//         but the C++ runtime for CPU solutions
//
// Translation units compile in parallel. The key is SHA-256 over the
// solution's code (paths and contents), the target, arch, every flag, the
// interface header kb/solution.h, and the compilers' identities (their
// `--version` text); a key already in the cache is answered from there,
// compile errors included. docs/kbcheck-build-verify.md documents the JSON.
//
// --device-only is the fast path: each .cu is compiled to a CUBIN by NVRTC
// (tens of milliseconds) with host code treated as device code; if NVRTC
// rejects a file, nvcc -cubin gives the verdict, so a compile_error is
// always nvcc's word.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/report.h"
#include "solution/solution.h"

namespace kb::build {

enum class BuildTarget { Cuda, Cpu };

struct BuildOptions {
  BuildTarget target = BuildTarget::Cuda;
  std::string arch = "sm_90";
  bool device_only = false;
  int jobs = 0;                       // 0: one per core, at most one per unit
  std::filesystem::path cache_dir;    // empty: defaultBuildCacheDir()
  bool use_cache = true;              // false: build, and do not store
  std::vector<std::string> nvcc_flags;  // after the defaults (part of the key)
  std::vector<std::string> cxx_flags;
  double timeout_seconds = 300.0;     // per compiler run
  int max_errors = 5;                 // diagnostics end after this many errors
  std::size_t max_diagnostic_bytes = 16 * 1024;
  std::filesystem::path cuda_home;    // empty: the configured toolkit
  std::string cxx;                    // empty: $CXX, else g++ on PATH
  // Python-format solutions (python_build.h): the task's "init" object
  // (seed and arguments ModelNew is built with; part of the key), and the
  // adapter library (empty: python_build.h's pythonAdapterPath()).
  Json python_init;
  std::filesystem::path python_adapter;
};

// One compiler run.
struct CompileStep {
  std::string source;     // relative path; "" for the link step
  std::string tool;       // "nvcc", "c++", "link", "nvrtc", "nvcc-cubin"
  bool ok = false;
  double seconds = 0.0;
  std::string diagnostics;             // verbatim, trimmed
  std::vector<std::string> command;    // argv (nvrtc: the options)
  // A load_inline extension's step that failed in the compiler (not a
  // refusal): the solution is built without that extension, and its
  // load_inline raises as torch's does when a build fails, so the
  // solution's own fallback (a try/except, as KernelBench's harness allows)
  // decides; the build is not compile_error for it.
  bool fallback = false;
};

struct BuildResult {
  Status status = Status::InfraError;  // ok, compile_error or infra_error
  std::string key;                     // "sha256:<hex>"
  std::string solution_hash;
  std::string target;                  // "cuda" or "cpu"
  std::string arch;
  bool device_only = false;
  std::filesystem::path library;       // solution.so (ok, not device_only)
  bool cached = false;
  double seconds = 0.0;                // this call, cache look-up included
  double build_seconds = 0.0;          // the build that produced the entry
  std::string diagnostics;             // the failing steps' output, trimmed
  bool diagnostics_truncated = false;
  std::vector<CompileStep> steps;
  std::string message;                 // one line: what failed and where

  Json toJson() const;
  static BuildResult fromJson(const Json& j);
};

// Builds (or finds in the cache) `solution`. A Python-format solution
// compiles nothing: its entry holds the adapter, its .py files and
// pymodel.json (python_build.h). Never throws for anything the
// solution's code does; infra_error carries toolchain and disk problems.
BuildResult buildSolution(const solution::Solution& solution, const BuildOptions& options);

// $KB_CACHE_DIR/build, else $XDG_CACHE_HOME/kernelbench-rl/build, else
// ~/.cache/kernelbench-rl/build.
std::filesystem::path defaultBuildCacheDir();

// Keeps the diagnostics up to the first `max_errors` errors (with their
// context lines) and at most `max_bytes`; sets `truncated` when it cut.
std::string trimDiagnostics(const std::string& text, int max_errors, std::size_t max_bytes,
                            bool* truncated);

}  // namespace kb::build
