// SHA-256 content hashes (OpenSSL), used to key caches and to name what a
// report is about.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace kb {

// Incremental SHA-256; hexDigest() ends it.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  std::string hexDigest();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256Hex(std::string_view bytes);

// "sha256:<hex>" of a file's contents. A file of at least 16 MiB is answered
// from a memo of an earlier hash when its device, inode, size, mtime and
// ctime are all unchanged (the kernel sets ctime on every change, and no
// user can set it back, so an edited or replaced file is always read again;
// no memo is kept for a file changed in the last two seconds, whose ctime a
// write in the same clock tick could share):
// a task's weights (hundreds of MB) are verified on every open, and reading
// them took 0.3 s of each profile. Memos live in cacheRoot()/file-sha256/;
// one that cannot be written costs only the next read. Throws kb::Error when
// the file cannot be read.
std::string fileSha256(const std::string& path);

}  // namespace kb
