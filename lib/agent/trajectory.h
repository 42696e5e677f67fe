// Trajectory files: JSONL, one finished rollout a line
// (docs/trajectory-format.md). One writer at a time: the writer holds an
// exclusive flock on the file for as long as it lives, and a second one is
// refused (OutputBusy). Appends are whole lines, flushed and synced, so an
// interrupted run leaves at most one partial last line, which the next
// writer cuts off and resume redoes; any other line that is not a record
// makes the file corrupt, and the writer refuses it (CorruptOutput) naming
// the line.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"

namespace kb::agent {

inline constexpr int kTrajectoryFormatVersion = 1;

// Reads every complete record of a trajectory file (missing file: none).
// Lines that are not JSON objects are counted in *skipped.
std::vector<Json> readTrajectories(const std::filesystem::path& path, size_t* skipped = nullptr);

// The rollout ids already in `path`, for resume: every rollout whose last
// record is not an infra_error (those are redone).
std::set<std::string> finishedRollouts(const std::filesystem::path& path);

// One combined record of a trajectory (docs/kbreward.md "combined record"):
// tool, version, task_id, solution_hash, status, timings, rollout_id, reward
// (the value), end_reason, turns.
Json resultRecord(const Json& trajectory);

// kbrollout eval's results.jsonl: one combined record per rollout of
// `trajectories`, the last record of each (a redone infra_error is
// replaced), written to a temporary file and renamed to `out`.
void writeResults(const std::filesystem::path& trajectories, const std::filesystem::path& out);

// The output is locked by another writer (another kbrollout on the same --out).
class OutputBusy : public UsageError {
 public:
  using UsageError::UsageError;
};

// The output holds a line, other than a partial last one, that is not a
// trajectory record (a JSON object with a string "rollout_id").
class CorruptOutput : public UsageError {
 public:
  using UsageError::UsageError;
};

class TrajectoryWriter {
 public:
  // Opens for appending (creating the file and its directory), takes the
  // exclusive lock, checks every line, then cuts a partial last line left by
  // an interrupted run. Throws OutputBusy, CorruptOutput, or kb::UsageError
  // when the file cannot be opened for writing.
  explicit TrajectoryWriter(const std::filesystem::path& path);
  ~TrajectoryWriter();
  TrajectoryWriter(const TrajectoryWriter&) = delete;
  TrajectoryWriter& operator=(const TrajectoryWriter&) = delete;
  // One record, one line, fsync'd. Thread-safe.
  void append(const Json& record);

  const std::filesystem::path& path() const { return path_; }
  // What the file held when it was opened: rollout id -> its last record's
  // status ("" when it has none), and how many records.
  const std::map<std::string, std::string>& lastStatus() const { return last_status_; }
  size_t recordsAtOpen() const { return records_at_open_; }
  bool cutPartialLine() const { return cut_partial_; }
  // The rollouts resume skips: those whose last record is not infra_error.
  std::set<std::string> finished() const;

 private:
  std::mutex mu_;
  int fd_ = -1;
  std::filesystem::path path_;
  std::map<std::string, std::string> last_status_;
  size_t records_at_open_ = 0;
  bool cut_partial_ = false;
};

}  // namespace kb::agent
