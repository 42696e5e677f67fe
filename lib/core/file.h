// Whole files in and out: read one into a string, write one atomically
// (temporary file + rename), and the JSON outputs the tools share (one
// compact object per stdout line; an indented report file). tools/cli_parse.h
// forwards to these, so a driver and a library write the same way.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/json.h"

namespace kb {

// The bytes of a file. Throws kb::UsageError "cannot read PATH" when it
// cannot be opened and "error reading PATH" when reading fails.
inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UsageError("error reading " + path.string());
  return ss.str();
}

// A file written in full or not at all: the bytes go to a temporary beside
// `path` (PATH.tmp.PID) and commit() renames it into place, so that a reader
// never sees half a file and a failed or interrupted write leaves the old
// one. Destroyed without commit() (an error, an exception, a full disk) it
// removes the temporary: nothing half-written is left under either name.
// Every error is a kb::Error naming the path and the system's reason
// ("No space left on device (ENOSPC)"). Parent directories are created.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  void commit();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
};

// "No space left on device (ENOSPC)": strerror with the errno's name, so a
// message says which fault it was in words a search finds.
std::string errnoText(int err);

// When the filesystem that holds `path` (or its nearest existing parent)
// has less than `min_free_bytes` available: "no space left on device
// (ENOSPC): PATH's filesystem has N KiB free". A step that failed while this
// holds failed for the machine, not for its input (issue 38: a full disk
// turned into verdicts on tasks).
std::optional<std::string> outOfSpace(const std::filesystem::path& path, std::uint64_t min_free_bytes = 256ull << 20);

// Writes `content` to `path` through an AtomicFile. Throws kb::Error.
inline void writeFileAtomic(const std::filesystem::path& path, const std::string& content) {
  AtomicFile f(path);
  f.write(content);
  f.commit();
}

// One compact JSON object and a newline on stdout, flushed (JSONL).
inline void printJsonLine(const Json& j) {
  std::string line = j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

// A JSON report: "" writes nothing, "-" prints one compact line on stdout, a
// path gets the indented document through writeFileAtomic.
inline void writeJsonOutput(const std::string& where, const Json& j) {
  if (where.empty()) return;
  if (where == "-") {
    printJsonLine(j);
    return;
  }
  writeFileAtomic(where, j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

}  // namespace kb
