// A solution directory (DESIGN.md §4 "Solution"): forward.cpp plus kernels,
// or, in the field's formats, KernelBench's model_new.py or the CUDA Agent
// paper's workspace (docs/solution-format.md), read once, validated, and
// hashed. Every later stage (static check, build, verify, profile) works from
// this snapshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kb::solution {

enum class SourceKind {
  CudaSource,  // .cu: compiled by nvcc, both host and device code
  CxxSource,   // .cpp .cc .cxx: host C++
  Header,      // .cuh .h .hpp .hh .inl: only through #include
  Python,      // .py: a KernelBench or workspace solution's model_new.py (and helpers)
  Other,       // anything else: listed, never compiled
};

struct SolutionFile {
  std::string path;  // relative to the solution root, '/'-separated
  std::filesystem::path absolute;
  SourceKind kind = SourceKind::Other;
  std::uintmax_t size = 0;
  std::string sha256;  // of the content; empty for Other
};

// A symbolic link whose target lies outside the solution directory.
struct SymlinkEscape {
  std::string path;    // the link, relative to the root
  std::string target;  // what it points to, as resolved
};

// The one limit on a solution's files, wherever they enter: this loader
// (kbcheck, kbprof, kbrollout's final check), the agent's workspace tools
// (agent/tools.h), kbrollout's replay folders (agent/replay_policy.cpp) and
// kbserve's requests (serve/request.h) all take their defaults from here.
struct SolutionLimits {
  std::uintmax_t max_file_bytes = 1 << 20;   // per file, code or not
  std::uintmax_t max_total_bytes = 8 << 20;  // all files together
  std::size_t max_files = 256;
};

// How the solution is written, from what its directory holds:
//   native       forward.cpp (kb/solution.h's interface)
//   kernelbench  model_new.py defining ModelNew, KernelBench's format (or a
//                single .py file given as the solution path)
//   workspace    the CUDA Agent paper's agent_workdir: model_new.py with
//                binding.cpp and kernels/
enum class Format { Native, KernelBench, Workspace };
const char* formatName(Format f);

struct Solution {
  std::filesystem::path root;  // canonical
  Format format = Format::Native;
  std::string entry = "forward.cpp";  // relative: forward.cpp, model_new.py or the single file's name
  std::vector<SolutionFile> files;  // sorted by path
  std::vector<SymlinkEscape> escapes;
  std::string hash;  // "sha256:<hex>" over paths and contents of code files

  std::vector<const SolutionFile*> sources() const;  // .cu and .cpp, forward.cpp first
  // A workspace's extension sources, as the paper's utils/compile.py finds
  // them: every .cu and .cpp at the top (binding.cpp) and directly in
  // kernels/, sorted by path; empty for the other formats.
  std::vector<const SolutionFile*> workspaceSources() const;
  bool isCode(const SolutionFile& f) const { return f.kind != SourceKind::Other; }
  bool isPython() const { return format != Format::Native; }
};

SourceKind classifyPath(const std::filesystem::path& path);

// In a workspace, the paper's harness files: utils/ (its compile,
// verification and profiling scripts) and model.py (its copy of the
// reference). The judge brings its own; loadSolution lists them as Other.
bool isWorkspaceHarnessFile(const std::string& rel);

// Reads `dir` (or one .py file: a KernelBench solution of that one file).
// Throws kb::UsageError, with the offending path in the message, when the
// directory is missing, has neither forward.cpp nor model_new.py, or holds a
// code file that is unreadable, binary (contains NUL bytes) or over the
// limits. Links that leave the directory are not followed; they are
// returned in `escapes`.
Solution loadSolution(const std::filesystem::path& dir, const SolutionLimits& limits = {});

}  // namespace kb::solution
