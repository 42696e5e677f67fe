// The tasks a server evaluates against: the bundles under one directory
// (kbsynth's layout, ids from task.json), each with a content hash over its
// files so that a remote node can be sent a bundle it lacks and tell that it
// holds the same one (docs/kbserve.md "Tasks").
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::serve {

struct StoredTask {
  std::string id;
  std::filesystem::path dir;
  bool cuda = false;          // task.json "device" == "cuda"
  std::string content_hash;   // "sha256:<hex>" over the bundle's relative paths and bytes
};

class TaskStore {
 public:
  // Reads every bundle under `root`. Throws kb::UsageError when there is none.
  explicit TaskStore(std::filesystem::path root);

  std::optional<StoredTask> find(const std::string& id) const;
  std::vector<StoredTask> list() const;
  // Reads the directory again (a bundle added or replaced); returns how many.
  size_t reload();
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  mutable std::mutex mu_;
  std::map<std::string, StoredTask> tasks_;
};

// "sha256:<hex>" over a bundle directory: each regular file's relative path
// and bytes, in path order.
std::string bundleHash(const std::filesystem::path& dir);

}  // namespace kb::serve
