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

}  // namespace kb
