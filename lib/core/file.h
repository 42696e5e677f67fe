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
#include <fstream>
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

// Writes `content` to `path` through a temporary file in the same directory
// and a rename, so that a reader never sees half a file and an interrupted
// run leaves the old one. Parent directories are created. Throws kb::Error.
inline void writeFileAtomic(const std::filesystem::path& path, const std::string& content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write " + path.string() + ": " + std::strerror(errno));
    out << content;
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      throw Error("error writing " + path.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot write " + path.string() + ": " + ec.message());
  }
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
