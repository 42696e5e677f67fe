#include "agent/trajectory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "core/file.h"
#include "core/jsonl.h"

namespace kb::agent {
namespace fs = std::filesystem;

namespace {

std::string statusOf(const Json& j) {
  auto it = j.find("status");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::set<std::string> finishedOf(const std::map<std::string, std::string>& last) {
  std::set<std::string> ids;
  for (const auto& [id, status] : last)
    if (status != "infra_error") ids.insert(id);
  return ids;
}

}  // namespace

std::vector<Json> readTrajectories(const fs::path& path, size_t* skipped) {
  return readJsonLines(path, skipped);
}

std::set<std::string> finishedRollouts(const fs::path& path) {
  std::map<std::string, std::string> last;
  for (const Json& j : readTrajectories(path))
    if (auto it = j.find("rollout_id"); it != j.end() && it->is_string()) last[*it] = statusOf(j);
  return finishedOf(last);
}

TrajectoryWriter::TrajectoryWriter(const fs::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UsageError("cannot open " + path.string() + " for writing: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw OutputBusy(path.string() + " is locked by another kbrollout writing to it; wait for that run "
                                       "to end or choose another output");
    throw UsageError("cannot lock " + path.string() + ": " + std::strerror(err));
  }
  // Check what is there: every complete line a record; a partial last line
  // (no newline: an interrupted append) is cut below.
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t pos = 0, line_no = 0, keep = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // the partial last line
    ++line_no;
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    keep = pos;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto id = j.is_object() ? j.find("rollout_id") : j.end();
    if (j.is_discarded() || !j.is_object() || id == j.end() || !id->is_string()) {
      ::close(fd_);
      fd_ = -1;
      throw CorruptOutput(path.string() + ":" + std::to_string(line_no) + ": " +
                          (j.is_discarded() ? "not JSON" : "not a trajectory record (no \"rollout_id\")") +
                          "; the file is corrupt (two writers at once?); move it away, or delete that line "
                          "to resume it");
    }
    last_status_[*id] = statusOf(j);
    ++records_at_open_;
  }
  if (keep != text.size()) {
    // A whole record without its newline (written by hand, or by another
    // tool) is kept; anything else there is an interrupted append.
    Json j = Json::parse(std::string_view(text).substr(keep), nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("rollout_id") && j["rollout_id"].is_string()) {
      ::lseek(fd_, 0, SEEK_END);
      if (::write(fd_, "\n", 1) == 1) {
        last_status_[j["rollout_id"].get<std::string>()] = statusOf(j);
        ++records_at_open_;
        keep = text.size();
      }
    }
  }
  if (keep != text.size()) {
    if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0) {
      std::string why = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      throw Error("cannot repair " + path.string() + ": " + why);
    }
    cut_partial_ = true;
  }
  ::lseek(fd_, 0, SEEK_END);
}

TrajectoryWriter::~TrajectoryWriter() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::set<std::string> TrajectoryWriter::finished() const { return finishedOf(last_status_); }

void TrajectoryWriter::append(const Json& record) {
  std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n <= 0) throw Error("error writing " + path_.string() + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  ::fsync(fd_);
}

Json resultRecord(const Json& t) {
  Json r;
  r["tool"] = "kbrollout";
  r["version"] = t.value("version", "");
  r["task_id"] = t.value("task_id", "");
  r["solution_hash"] = t.contains("solution_hash") ? t["solution_hash"] : Json(nullptr);
  r["status"] = t.contains("status") ? t["status"] : Json(nullptr);
  r["timings"] = t.contains("timings") ? t["timings"] : Json(nullptr);
  r["rollout_id"] = t.value("rollout_id", "");
  r["reward"] = t.contains("reward") ? t["reward"]["value"] : Json(nullptr);
  r["end_reason"] = t.contains("end") ? t["end"]["reason"] : Json(nullptr);
  r["turns"] = t.contains("end") ? t["end"]["turns"] : Json(nullptr);
  return r;
}

void writeResults(const std::filesystem::path& trajectories, const std::filesystem::path& out) {
  std::vector<Json> recs = readTrajectories(trajectories);
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < recs.size(); ++i) last[recs[i].value("rollout_id", "")] = i;
  AtomicFile res(out);  // a full disk leaves neither a half file nor a temporary
  for (size_t i = 0; i < recs.size(); ++i)
    if (last[recs[i].value("rollout_id", "")] == i) res.write(resultRecord(recs[i]).dump() + "\n");
  res.commit();
}

}  // namespace kb::agent
