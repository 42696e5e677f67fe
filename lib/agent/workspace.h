// The directory one rollout works in, and the only one its tools touch:
//
//   <root>/AGENT.md                 the instructions (docs/agent-guide.md)
//   <root>/model.py                 the task's PyTorch reference
//   <root>/include/kb/solution.h    the solution interface, to read
//   <root>/solution/forward.cpp     the entry point, a skeleton at first
//   <root>/solution/kernels/        where kernels go
//
// Every path the model gives is resolved here: it must be relative, may not
// contain "..", and no component of it may be a symbolic link (links are
// never followed, wherever they point). A refusal is a PathRefused error,
// which the tool turns into an observation.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.h"

namespace kb::agent {

class PathRefused : public Error {
 public:
  using Error::Error;
};

struct WorkspaceSetup {
  std::filesystem::path task_dir;   // holds model.py
  std::filesystem::path guide;      // copied to AGENT.md
  std::filesystem::path interface_header;  // kb/solution.h
};

class Workspace {
 public:
  Workspace() = default;
  explicit Workspace(std::filesystem::path root);  // an existing workspace

  // Creates (or empties and recreates) `root` and lays the files out.
  // Throws kb::UsageError when the task has no model.py or a file is missing.
  static Workspace create(const std::filesystem::path& root, const WorkspaceSetup& setup);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path solutionDir() const { return root_ / "solution"; }

  // The absolute path for `path` (relative to the root), or PathRefused.
  // Components that do not exist yet are allowed (for writing).
  std::filesystem::path resolve(const std::string& path) const;

  // `absolute` (under the root) as the model sees it: "solution/forward.cpp".
  std::string display(const std::filesystem::path& absolute) const;

 private:
  std::filesystem::path root_;
};

// The forward.cpp a workspace starts with.
std::string solutionSkeleton();

}  // namespace kb::agent
