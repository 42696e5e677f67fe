// Trajectory files: JSONL, one finished rollout a line
// (docs/trajectory-format.md). Appends are whole lines, flushed and synced,
// so an interrupted run leaves at most one partial last line, which readers
// skip and resume redoes.
#pragma once

#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::agent {

inline constexpr int kTrajectoryFormatVersion = 1;

// Reads every complete record of a trajectory file (missing file: none).
// Lines that are not JSON objects are counted in *skipped.
std::vector<Json> readTrajectories(const std::filesystem::path& path, size_t* skipped = nullptr);

// The rollout ids already in `path`, for resume.
std::set<std::string> finishedRollouts(const std::filesystem::path& path);

class TrajectoryWriter {
 public:
  // Opens for appending; a partial last line left by an interrupted run is
  // cut off first. Throws kb::Error when the file cannot be opened.
  explicit TrajectoryWriter(const std::filesystem::path& path);
  ~TrajectoryWriter();
  TrajectoryWriter(const TrajectoryWriter&) = delete;
  TrajectoryWriter& operator=(const TrajectoryWriter&) = delete;
  // One record, one line, fsync'd. Thread-safe.
  void append(const Json& record);

 private:
  std::mutex mu_;
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace kb::agent
