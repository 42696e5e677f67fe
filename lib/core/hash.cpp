#include "core/hash.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/paths.h"

namespace kb {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1)
    throw Error("OpenSSL: cannot initialise SHA-256");
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::update(std::string_view bytes) {
  EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size());
}

std::string Sha256::hexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(state_->ctx, digest, &len);
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

std::string sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hexDigest();
}

}  // namespace kb

namespace kb {
namespace {

std::string hashContents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) throw Error("cannot read " + path);
  return "sha256:" + h.hexDigest();
}

}  // namespace

std::string fileSha256(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (16 << 20))
    return hashContents(path);
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  const std::string identity =
      abs + "\n" + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_size) +
      " " + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " " +
      std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
  const std::filesystem::path memo = cacheRoot() / "file-sha256" / sha256Hex(identity).substr(0, 40);
  {
    std::ifstream in(memo);
    std::string stored_identity, line, digest;
    // The memo holds the identity it was made for, then the digest.
    while (std::getline(in, line) && line != "--") stored_identity += (stored_identity.empty() ? "" : "\n") + line;
    if (in && std::getline(in, digest) && stored_identity == identity && digest.rfind("sha256:", 0) == 0)
      return digest;
  }
  std::string digest = hashContents(path);
  // Kept only for a file unchanged during the read and last changed more
  // than a second ago: ctime has a coarse clock (milliseconds), so a write
  // in the same tick as a recent one would otherwise keep its ctime ("racy
  // git"); any later change gets a ctime past the memo's.
  struct stat after {};
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  if (::stat(path.c_str(), &after) == 0 && after.st_ino == st.st_ino && after.st_size == st.st_size &&
      after.st_ctim.tv_sec == st.st_ctim.tv_sec && after.st_ctim.tv_nsec == st.st_ctim.tv_nsec &&
      now.tv_sec - st.st_ctim.tv_sec >= 2) {
    std::filesystem::create_directories(memo.parent_path(), ec);
    const std::filesystem::path tmp = memo.string() + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << identity << "\n--\n" << digest << "\n";
    }
    std::filesystem::rename(tmp, memo, ec);
    if (ec) std::filesystem::remove(tmp, ec);
  }
  return digest;
}

}  // namespace kb
