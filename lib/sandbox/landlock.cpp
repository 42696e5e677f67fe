#include "sandbox/landlock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

namespace kb::sandbox {
namespace {

// The ruleset attribute as of ABI 6 (older kernels read a prefix of it).
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};
struct PathBeneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
constexpr uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;

// The rights a rule on a file (not a directory) may carry.
uint64_t fileRights(long abi) {
  uint64_t r = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return r;
}

// Adds a path-beneath rule; false when the path cannot be opened or the
// kernel refuses the rule.
bool addRule(int ruleset, const std::filesystem::path& path, uint64_t rights, long abi) {
  int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= fileRights(abi);
  PathBeneath pb{rights, fd};
  long rc = ::syscall(__NR_landlock_add_rule, ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &pb, 0);
  ::close(fd);
  return rc == 0;
}

}  // namespace

long landlockAbi() {
  long abi = ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 1 ? 0 : abi;
}

uint64_t landlockWriteRights(long abi) {
  uint64_t write = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                   LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                   LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                   LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                   LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) write |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) write |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return write;
}

std::vector<bool> restrictSelf(const LandlockRuleset& r, long abi) {
  RulesetAttr attr{r.handled_fs, 0, 0};
  size_t attr_size = sizeof(uint64_t);
  if (abi >= 4 && r.deny_tcp) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    attr_size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6 && r.scope_ipc) {
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
    attr_size = sizeof attr;
  }
  int ruleset = static_cast<int>(::syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0));
  if (ruleset < 0) throw Error(std::string("landlock_create_ruleset: ") + std::strerror(errno));
  std::vector<bool> taken;
  for (const auto& [path, rights] : r.rules) taken.push_back(addRule(ruleset, path, rights, abi));
  long rc = ::syscall(__NR_landlock_restrict_self, ruleset, 0);
  int err = errno;
  ::close(ruleset);
  if (rc != 0) throw Error(std::string("landlock_restrict_self: ") + std::strerror(err));
  return taken;
}

}  // namespace kb::sandbox
