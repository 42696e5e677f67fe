#include "core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace kb {
namespace fs = std::filesystem;

std::string errnoText(int err) {
  std::string text = std::strerror(err);
  const char* name = strerrorname_np(err);
  if (name) text += std::string(" (") + name + ")";
  return text;
}

std::optional<std::string> outOfSpace(const fs::path& path, std::uint64_t min_free_bytes) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return std::nullopt;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs st {};
  if (::statvfs(p.c_str(), &st) != 0) return std::nullopt;
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  if (free_bytes >= min_free_bytes) return std::nullopt;
  return "no space left on device (ENOSPC): the filesystem of " + p.string() + " has " +
         std::to_string(free_bytes >> 10) + " KiB free";
}

AtomicFile::AtomicFile(fs::path path) : path_(std::move(path)) {
  std::error_code ec;
  // A target that exists and is not a regular file (/dev/null, a FIFO, a
  // terminal) is written in place: renaming over it would replace the
  // device with a file (as root, /dev/null for the whole machine).
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error("cannot write " + path_.string() + ": " + errnoText(errno));
    return;  // tmp_ stays empty: commit() only closes
  }
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
  // PATH.tmp.PID.N, created exclusively: two threads (or processes) writing
  // the same path never share a temporary.
  std::random_device random;
  for (int attempt = 0; fd_ < 0; ++attempt) {
    tmp_ = path_;
    tmp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(random() % 1000000);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || attempt > 16)) {
      const int err = errno;
      tmp_.clear();
      throw Error("cannot write " + path_.string() + ": " + errnoText(err));
    }
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t n) {
  if (fd_ < 0) throw Error("cannot write " + path_.string() + ": already committed");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("error writing " + path_.string() + ": " + errnoText(w < 0 ? errno : EIO));
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error("cannot write " + path_.string() + ": already committed");
  // close() reports what a delayed write could not do (NFS, quotas).
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw Error("error writing " + path_.string() + ": " + errnoText(errno));
  if (tmp_.empty()) return;  // written in place (not a regular file)
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) throw Error("cannot write " + path_.string() + ": " + errnoText(errno));
  tmp_.clear();
}

}  // namespace kb
