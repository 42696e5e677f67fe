// The server's journal: one JSON object per line, appended and synced
// before the client is told "accepted", so that after kill -9 and a restart
// every accepted evaluation is finished or answered (docs/kbserve.md
// "Nothing lost"). Records: {"op":"accepted","id","request","submitted_at"},
// {"op":"started","id"}, {"op":"finished","id","evaluation"}.
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

class Journal {
 public:
  // Opens (creates) `file` for appending. Throws kb::Error.
  explicit Journal(std::filesystem::path file);
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

 private:
  void append(const Json& record, bool sync);
  std::filesystem::path file_;
  std::mutex mu_;
  int fd_ = -1;
};

}  // namespace kb::serve
