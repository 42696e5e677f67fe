#include "serve/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

#include "core/error.h"

namespace fs = std::filesystem;

namespace kb::serve {

namespace {

int openAppend(const fs::path& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot open the journal " + file.string() + ": " + std::strerror(errno));
  return fd;
}

void writeAll(int fd, const std::string& bytes, const fs::path& file) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write the journal " + file.string() + ": " + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
}

}  // namespace

JournalEntry withoutFiles(JournalEntry e) {
  if (e.result && e.request.is_object()) e.request.erase("files");
  return e;
}

Journal::Journal(fs::path file, JournalLimits limits) : file_(std::move(file)), limits_(limits) {
  std::error_code ec;
  if (file_.has_parent_path()) fs::create_directories(file_.parent_path(), ec);
  fd_ = openAppend(file_);
  size_t size = fs::file_size(file_, ec);
  bytes_ = ec ? 0 : size;
  compact_at_ = std::max(limits_.compact_bytes, 2 * bytes_);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const Json& record, bool sync) {
  std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  writeAll(fd_, line, file_);
  if (sync && ::fdatasync(fd_) != 0)
    throw Error("cannot sync the journal " + file_.string() + ": " + std::strerror(errno));
  bytes_ += line.size();
  if (bytes_ > compact_at_) {
    try {
      compactLocked();
    } catch (const std::exception&) {
      // The record is written; a journal that could not be compacted still
      // replays, and the next restart compacts it.
      compact_at_ = 2 * bytes_;
    }
  }
}

size_t Journal::compactions() const {
  std::lock_guard lock(mu_);
  return compactions_;
}

// What a restart would keep, from the file itself (every append holds mu_,
// so nothing is written between the read and the rename): finished entries
// without their files, the newest keep_finished of them, and every entry
// not finished yet.
void Journal::compactLocked() {
  JournalReplay r = replay(file_);
  size_t finished = 0;
  for (const JournalEntry& e : r.entries) finished += e.result ? 1 : 0;
  std::vector<JournalEntry> keep;
  size_t seen = 0;
  for (JournalEntry& e : r.entries) {
    if (e.result && finished - seen++ > limits_.keep_finished) continue;
    keep.push_back(withoutFiles(std::move(e)));
  }
  replaceLocked(keep);
  ++compactions_;
  compact_at_ = std::max(limits_.compact_bytes, 2 * bytes_);
}

void Journal::accepted(const std::string& id, const Json& request, double submitted_at) {
  append({{"op", "accepted"}, {"id", id}, {"request", request}, {"submitted_at", submitted_at}}, true);
}

void Journal::started(const std::string& id) { append({{"op", "started"}, {"id", id}}, true); }

void Journal::finished(const std::string& id, const Json& evaluation) {
  append({{"op", "finished"}, {"id", id}, {"evaluation", evaluation}}, true);
}

void Journal::rewrite(const std::vector<JournalEntry>& entries) {
  std::lock_guard lock(mu_);
  replaceLocked(entries);
  compact_at_ = std::max(limits_.compact_bytes, 2 * bytes_);
}

void Journal::replaceLocked(const std::vector<JournalEntry>& entries) {
  fs::path tmp = file_;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
  size_t written = 0;
  try {
    for (const JournalEntry& e : entries) {
      std::string out = Json({{"op", "accepted"}, {"id", e.id}, {"request", e.request}, {"submitted_at", e.submitted_at}}).dump() + "\n";
      for (int i = 0; i < e.starts; ++i) out += Json({{"op", "started"}, {"id", e.id}}).dump() + "\n";
      if (e.result) out += Json({{"op", "finished"}, {"id", e.id}, {"evaluation", *e.result}}).dump() + "\n";
      writeAll(fd, out, tmp);
      written += out.size();
    }
    if (::fsync(fd) != 0) throw Error("cannot sync " + tmp.string() + ": " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  std::error_code ec;
  fs::rename(tmp, file_, ec);
  if (ec) throw Error("cannot replace the journal " + file_.string() + ": " + ec.message());
  ::close(fd_);
  fd_ = openAppend(file_);
  bytes_ = written;
}

JournalReplay Journal::replay(const fs::path& file) {
  JournalReplay out;
  std::ifstream in(file);
  if (!in) return out;  // no journal yet
  std::map<std::string, size_t> index;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("op") || !j.contains("id") || !j["id"].is_string()) {
      ++out.torn_lines;
      continue;
    }
    std::string op = j["op"].get<std::string>(), id = j["id"].get<std::string>();
    if (op == "accepted") {
      index[id] = out.entries.size();
      out.entries.push_back({id, j.value("request", Json::object()), j.value("submitted_at", 0.0), 0, std::nullopt});
      continue;
    }
    auto it = index.find(id);
    if (it == index.end()) {
      ++out.torn_lines;
      continue;
    }
    if (op == "started") ++out.entries[it->second].starts;
    else if (op == "finished") out.entries[it->second].result = j.value("evaluation", Json::object());
    else ++out.torn_lines;
  }
  return out;
}

}  // namespace kb::serve
