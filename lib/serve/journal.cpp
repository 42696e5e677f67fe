#include "serve/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
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

Journal::Journal(fs::path file) : file_(std::move(file)) {
  std::error_code ec;
  if (file_.has_parent_path()) fs::create_directories(file_.parent_path(), ec);
  fd_ = openAppend(file_);
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
}

void Journal::accepted(const std::string& id, const Json& request, double submitted_at) {
  append({{"op", "accepted"}, {"id", id}, {"request", request}, {"submitted_at", submitted_at}}, true);
}

void Journal::started(const std::string& id) { append({{"op", "started"}, {"id", id}}, true); }

void Journal::finished(const std::string& id, const Json& evaluation) {
  append({{"op", "finished"}, {"id", id}, {"evaluation", evaluation}}, true);
}

void Journal::rewrite(const std::vector<JournalEntry>& entries) {
  fs::path tmp = file_;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
  try {
    for (const JournalEntry& e : entries) {
      std::string out = Json({{"op", "accepted"}, {"id", e.id}, {"request", e.request}, {"submitted_at", e.submitted_at}}).dump() + "\n";
      for (int i = 0; i < e.starts; ++i) out += Json({{"op", "started"}, {"id", e.id}}).dump() + "\n";
      if (e.result) out += Json({{"op", "finished"}, {"id", e.id}, {"evaluation", *e.result}}).dump() + "\n";
      writeAll(fd, out, tmp);
    }
    if (::fsync(fd) != 0) throw Error("cannot sync " + tmp.string() + ": " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::rename(tmp, file_, ec);
  if (ec) throw Error("cannot replace the journal " + file_.string() + ": " + ec.message());
  ::close(fd_);
  fd_ = openAppend(file_);
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
