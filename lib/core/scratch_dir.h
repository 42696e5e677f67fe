// Working directories in a shared scratch folder (/tmp) that a later run
// reclaims when their owner died without removing them. A verify's result
// channel can hold gigabytes (KernelBench's 6 GiB level-1 outputs); a run
// ended by SIGKILL, the OOM killer or a CI time limit runs no destructor, and
// its directories would fill the disk for every run after it.
//
// The owner holds an flock on DIR/owner.lock for as long as the directory is
// in use; the kernel drops it when the process dies, however it dies. A run
// that makes a directory first removes those of the same prefix whose lock
// no process holds. A directory without owner.lock (kept on purpose, or made
// by an older version) is never touched.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kb {

// The held lock of one scratch directory: closing it (the last copy of the
// ScratchDir dropped) makes the directory reclaimable by later runs.
class ScratchOwner {
 public:
  explicit ScratchOwner(int fd) : fd_(fd) {}
  ~ScratchOwner();
  ScratchOwner(const ScratchOwner&) = delete;
  ScratchOwner& operator=(const ScratchOwner&) = delete;

 private:
  int fd_;
};

struct ScratchDir {
  std::filesystem::path path;
  std::shared_ptr<const ScratchOwner> owner;  // held while any copy lives (makeScratchDir never returns null)
};

// Reclaims `parent`'s abandoned <prefix>-* directories, then makes
// parent/<prefix>-XXXXXX (mode 0700) and takes its lock. Throws kb::Error
// with the path and the system's reason when it cannot.
ScratchDir makeScratchDir(const std::filesystem::path& parent, const std::string& prefix);

// Keeps `dir` for the user (--keep-workdir): its owner.lock is removed, so
// no later run reclaims it.
void keepScratchDir(const std::filesystem::path& dir);

// The <prefix>-* directories of `parent` that belong to this user and whose
// owner.lock no process holds, removed; returns their paths.
std::vector<std::filesystem::path> reclaimAbandonedScratchDirs(const std::filesystem::path& parent,
                                                                const std::string& prefix);

}  // namespace kb
