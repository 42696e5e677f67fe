// A solution directory (DESIGN.md §4 "Solution"): forward.cpp plus kernels,
// read once, validated, and hashed. Every later stage (static check, build,
// verify, profile) works from this snapshot.
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

struct Solution {
  std::filesystem::path root;  // canonical
  std::vector<SolutionFile> files;  // sorted by path
  std::vector<SymlinkEscape> escapes;
  std::string hash;  // "sha256:<hex>" over paths and contents of code files

  std::vector<const SolutionFile*> sources() const;  // .cu and .cpp, forward.cpp first
  bool isCode(const SolutionFile& f) const { return f.kind != SourceKind::Other; }
};

SourceKind classifyPath(const std::filesystem::path& path);

// Reads `dir`. Throws kb::UsageError, with the offending path in the message,
// when the directory is missing, has no forward.cpp, or holds a code file that
// is unreadable, binary (contains NUL bytes) or over the limits. Links that
// leave the directory are not followed; they are returned in `escapes`.
Solution loadSolution(const std::filesystem::path& dir, const SolutionLimits& limits = {});

}  // namespace kb::solution
