// The server's journal: one JSON object per line, appended and synced
// before the client is told "accepted", so that after kill -9 and a restart
// every accepted evaluation is finished or answered (docs/kbserve.md
// "Nothing lost"). Records: {"op":"accepted","id","request","submitted_at"},
// {"op":"started","id"}, {"op":"finished","id","evaluation"}. While the
// server runs the file is compacted whenever it has grown past its limit
// (JournalLimits): replayed, finished evaluations' solution files dropped,
// the oldest finished beyond keep_finished dropped, rewritten.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::serve {

struct JournalEntry {
  std::string id;
  Json request;                 // the canonical request (EvaluationRequest::toJson)
  double submitted_at = 0;      // seconds since the epoch
  int starts = 0;               // "started" records seen
  std::optional<Json> result;   // the finished evaluation's JSON
};

struct JournalReplay {
  std::vector<JournalEntry> entries;  // in order of acceptance
  size_t torn_lines = 0;              // lines that did not parse (a write cut by a crash)
};

// The finished evaluation's entry without its solution's files: it is
// answered from its result, never run again.
JournalEntry withoutFiles(JournalEntry e);

struct JournalLimits {
  size_t keep_finished = 10000;           // finished entries a compaction keeps (newest)
  size_t compact_bytes = 64ull << 20;     // compacted when the file passes this, or twice its last compacted size
};

class Journal {
 public:
  // Opens (creates) `file` for appending. Throws kb::Error.
  explicit Journal(std::filesystem::path file, JournalLimits limits = {});
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Each throws kb::Error when the line cannot be written (disk full): the
  // caller then refuses the request instead of accepting what it cannot keep.
  void accepted(const std::string& id, const Json& request, double submitted_at);
  void started(const std::string& id);
  void finished(const std::string& id, const Json& evaluation);

  // Replaces the file with `entries` (temporary file, fsync, rename) and
  // appends from there on.
  void rewrite(const std::vector<JournalEntry>& entries);

  static JournalReplay replay(const std::filesystem::path& file);
  const std::filesystem::path& path() const { return file_; }
  size_t compactions() const;  // while this object was open

 private:
  void append(const Json& record, bool sync);
  void replaceLocked(const std::vector<JournalEntry>& entries);  // under mu_
  void compactLocked();                                          // under mu_
  std::filesystem::path file_;
  JournalLimits limits_;
  mutable std::mutex mu_;
  int fd_ = -1;
  size_t bytes_ = 0, compact_at_ = 0, compactions_ = 0;
};

}  // namespace kb::serve
