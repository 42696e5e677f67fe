#include "serve/task_store.h"

#include <algorithm>

#include "agent/runner.h"
#include "core/error.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace kb::serve {

std::string bundleHash(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), dir));
  std::sort(files.begin(), files.end());
  Sha256 h;
  for (const fs::path& f : files) {
    std::string rel = f.generic_string();
    h.update(rel);
    h.update(std::string(1, '\0'));
    h.update(fileSha256((dir / f).string()));
    h.update(std::string(1, '\n'));
  }
  return "sha256:" + h.hexDigest();
}

TaskStore::TaskStore(fs::path root) : root_(std::move(root)) {
  if (reload() == 0) throw UsageError("no task bundle under " + root_.string());
}

size_t TaskStore::reload() {
  std::map<std::string, StoredTask> found;
  for (const agent::TaskRef& t : agent::findTasks(root_, false)) {
    if (!fs::is_regular_file(t.dir / "task.json")) continue;  // a model.py without a bundle
    StoredTask s{t.id, fs::absolute(t.dir), t.cuda, bundleHash(t.dir)};
    found[s.id] = s;
  }
  std::lock_guard lock(mu_);
  tasks_ = std::move(found);
  return tasks_.size();
}

std::optional<StoredTask> TaskStore::find(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  return it->second;
}

std::vector<StoredTask> TaskStore::list() const {
  std::lock_guard lock(mu_);
  std::vector<StoredTask> out;
  for (const auto& [id, t] : tasks_) out.push_back(t);
  return out;
}

}  // namespace kb::serve
