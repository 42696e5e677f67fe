#include "sandbox/confine.h"

#include "sandbox/landlock_rights.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <fstream>
#include <string>

#include "core/error.h"

namespace kb::sandbox {
namespace {

// ---- SIGSYS reporting -------------------------------------------------------

// Names of the trapped system calls by number, filled before the filter is
// loaded, so that the handler only reads memory and calls write().
constexpr int kMaxSyscall = 1024;
const char* g_syscall_names[kMaxSyscall];

void writeAll(int fd, const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void onSigsys(int, siginfo_t* info, void*) {
  int nr = info->si_syscall;
  char line[160];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n + 1 < sizeof line) line[n++] = *s++;
  };
  put(kBlockedSyscallMarker);
  const char* name = (nr >= 0 && nr < kMaxSyscall) ? g_syscall_names[nr] : nullptr;
  if (name) {
    put(name);
  } else {
    char num[16];
    int k = 0, v = nr < 0 ? 0 : nr;
    do num[k++] = static_cast<char>('0' + v % 10), v /= 10;
    while (v && k < 15);
    put("#");
    while (k && n + 1 < sizeof line) line[n++] = num[--k];
  }
  put("\n");
  writeAll(2, line, n);
  // Changing the SIGSYS action is itself trapped; trapped while SIGSYS is
  // blocked (we are in its handler), the kernel resets it to the default
  // action and the process dies of SIGSYS. The lines below are the fallback.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGSYS, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGSYS);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::syscall(SYS_tgkill, ::getpid(), ::gettid(), SIGSYS);
  ::_exit(128 + SIGSYS);
}

// ---- seccomp ------------------------------------------------------------------

struct Filter {
  scmp_filter_ctx ctx = nullptr;
  ~Filter() {
    if (ctx) seccomp_release(ctx);
  }
};

// Adds `action` for syscall `name` when all `cmps` hold; unknown names (a
// call this architecture or libseccomp lacks) are skipped.
void rule(Filter& f, uint32_t action, const char* name, std::initializer_list<scmp_arg_cmp> cmps = {}) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return;
  if (nr >= 0 && nr < kMaxSyscall) g_syscall_names[nr] = name;
  int rc = seccomp_rule_add_array(f.ctx, action, nr, static_cast<unsigned>(cmps.size()),
                                  cmps.size() ? cmps.begin() : nullptr);
  if (rc != 0 && rc != -EEXIST)
    throw Error(std::string("seccomp: cannot add a rule for ") + name + ": " + std::strerror(-rc));
}

void installSeccomp(const ConfinePolicy& policy) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = onSigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSYS, &sa, nullptr) != 0)
    throw Error(std::string("sigaction(SIGSYS): ") + std::strerror(errno));

  Filter f;
  f.ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!f.ctx) throw Error("seccomp_init failed");
  const uint32_t kTrap = SCMP_ACT_TRAP;
  const pid_t self = ::getpid();
  const auto self64 = static_cast<scmp_datum_t>(self);

  // Network: no sockets at all.
  for (const char* n : {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
                        "sendmmsg", "recvmmsg"})
    rule(f, kTrap, n);
  // Processes: no exec, no new processes; threads (CLONE_THREAD) are fine.
  for (const char* n : {"execve", "execveat", "fork", "vfork"}) rule(f, kTrap, n);
  rule(f, kTrap, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)});
  rule(f, SCMP_ACT_ERRNO(ENOSYS), "clone3");
  // Files: nothing created, truncated, appended, written or removed.
  std::initializer_list<int> write_flags = {O_WRONLY, O_CREAT, O_TRUNC, O_APPEND};
  for (int flag : write_flags) {
    rule(f, kTrap, "open", {SCMP_A1(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(flag),
                                    static_cast<scmp_datum_t>(flag))});
    rule(f, kTrap, "openat", {SCMP_A2(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(flag),
                                      static_cast<scmp_datum_t>(flag))});
  }
  if (!policy.allow_open_rdwr) {
    rule(f, kTrap, "open", {SCMP_A1(SCMP_CMP_MASKED_EQ, O_RDWR, O_RDWR)});
    rule(f, kTrap, "openat", {SCMP_A2(SCMP_CMP_MASKED_EQ, O_RDWR, O_RDWR)});
  }
  rule(f, SCMP_ACT_ERRNO(ENOSYS), "openat2");  // flags in a struct: unreadable here
  for (const char* n :
       {"creat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat",
        "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat",
        "fchmodat2", "chown", "fchown", "lchown", "fchownat", "truncate", "mknod", "mknodat",
        "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr",
        "removexattr", "lremovexattr", "fremovexattr", "name_to_handle_at", "open_by_handle_at"})
    rule(f, kTrap, n);
  // Other processes: no signals, no tracing, no reading their memory.
  rule(f, kTrap, "kill", {SCMP_A0(SCMP_CMP_NE, self64)});
  rule(f, kTrap, "tgkill", {SCMP_A0(SCMP_CMP_NE, self64)});
  rule(f, kTrap, "rt_sigqueueinfo", {SCMP_A0(SCMP_CMP_NE, self64)});
  rule(f, kTrap, "rt_tgsigqueueinfo", {SCMP_A0(SCMP_CMP_NE, self64)});
  // Keep our handler: no new action for SIGSYS. Reading it (act NULL) is
  // fine: an embedded Python's signal module reads every signal's handler.
  rule(f, kTrap, "rt_sigaction", {SCMP_A0(SCMP_CMP_EQ, SIGSYS), SCMP_A1(SCMP_CMP_NE, 0)});
  for (const char* n : {"tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "ptrace",
                        "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
                        "setsid", "setpgid"})
    rule(f, kTrap, n);
  // The protocol descriptors (0: the socket to the parent, 1-2: output,
  // 3: the result channel) cannot be replaced, closed, reconfigured or read
  // ahead: a record or an answer always travels on the channel the parent
  // made. (Writing on them stays possible; what the parent reads there is
  // checked against the protocol, and anything out of turn is hack_detected.)
  const auto last_fd = static_cast<scmp_datum_t>(3);
  rule(f, kTrap, "dup2", {SCMP_A1(SCMP_CMP_LE, last_fd)});
  rule(f, kTrap, "dup3", {SCMP_A1(SCMP_CMP_LE, last_fd)});
  rule(f, kTrap, "close", {SCMP_A0(SCMP_CMP_LE, last_fd)});
  rule(f, kTrap, "close_range", {SCMP_A0(SCMP_CMP_LE, last_fd)});
  rule(f, kTrap, "shutdown", {SCMP_A0(SCMP_CMP_LE, last_fd)});
  for (int cmd : {F_SETFD, F_SETFL, F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY, F_SETPIPE_SZ,
                  F_DUPFD, F_DUPFD_CLOEXEC})
    rule(f, kTrap, "fcntl", {SCMP_A0(SCMP_CMP_LE, last_fd), SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(cmd))});
  rule(f, kTrap, "recvfrom", {SCMP_A0(SCMP_CMP_LE, last_fd), SCMP_A3(SCMP_CMP_MASKED_EQ, MSG_PEEK, MSG_PEEK)});
  rule(f, kTrap, "recvmsg", {SCMP_A0(SCMP_CMP_LE, last_fd), SCMP_A2(SCMP_CMP_MASKED_EQ, MSG_PEEK, MSG_PEEK)});
  // The socket to the parent (fd 0) is spoken on with send/recv only (the
  // harness's calls, profile/timing.cpp); read() or write() on it is not
  // the harness's.
  for (const char* n : {"read", "readv", "pread64", "preadv", "preadv2", "write", "writev", "pwrite64", "pwritev",
                        "pwritev2"})
    rule(f, kTrap, n, {SCMP_A0(SCMP_CMP_EQ, 0)});
  // Terminal injection.
  rule(f, kTrap, "ioctl", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI)});
  // The kernel's administrative surface.
  for (const char* n :
       {"mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open",
        "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl",
        "add_key", "request_key", "init_module", "finit_module", "delete_module", "kexec_load",
        "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime",
        "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm", "quotactl",
        "fanotify_init", "memfd_secret", "move_mount", "open_tree", "fsopen", "fsmount",
        "fspick", "mount_setattr"})
    rule(f, kTrap, n);

  int rc = seccomp_load(f.ctx);
  if (rc != 0) throw Error(std::string("seccomp_load: ") + std::strerror(-rc));
}

// ---- Landlock -----------------------------------------------------------------

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

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

// Read rights (handled only when something is hidden) and the subset a
// rule on a file (not a directory) may carry.
constexpr uint64_t kReadRights = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;
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

std::string installLandlock(const ConfinePolicy& policy) {
  const bool hide = !policy.hidden_dirs.empty();
  long abi = ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    if (hide) throw Error("Landlock is not available, and files must be hidden from this worker");
    return "landlock-unavailable";
  }
  uint64_t write_rights = landlockWriteRights(abi);
  uint64_t handled = write_rights | (hide ? kReadRights : 0);
  RulesetAttr attr{handled, 0, 0};
  size_t attr_size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    attr_size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
    attr_size = sizeof attr;
  }
  int ruleset = static_cast<int>(::syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0));
  if (ruleset < 0) {
    if (hide) throw Error(std::string("landlock_create_ruleset: ") + std::strerror(errno));
    return std::string("landlock-failed(") + std::strerror(errno) + ")";
  }
  for (const auto& dir : policy.writable_dirs) addRule(ruleset, dir, write_rights | (hide ? kReadRights : 0), abi);
  size_t read_rules = 0;
  if (hide) {
    for (const auto& p : readableRoots(policy.hidden_dirs)) read_rules += addRule(ruleset, p, kReadRights, abi) ? 1 : 0;
    for (const auto& p : policy.readable_within_hidden) read_rules += addRule(ruleset, p, kReadRights, abi) ? 1 : 0;
  }
  long rc = ::syscall(__NR_landlock_restrict_self, ruleset, 0);
  int err = errno;
  ::close(ruleset);
  if (rc != 0) {
    if (hide) throw Error(std::string("landlock_restrict_self: ") + std::strerror(err));
    return std::string("landlock-failed(") + std::strerror(err) + ")";
  }
  std::string what = "landlock-abi" + std::to_string(abi);
  if (hide) what += " landlock-hidden(" + std::to_string(policy.hidden_dirs.size()) + " dirs, " + std::to_string(read_rules) + " read rules)";
  return what;
}

// ---- capabilities -----------------------------------------------------------

bool dropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  std::memset(data, 0, sizeof data);
  return ::syscall(SYS_capset, &header, data) == 0;
}

uint64_t statusField(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  size_t len = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':')
      return std::stoull(line.substr(len + 1)) * 1024;  // kB
  return 0;
}

}  // namespace

std::vector<std::filesystem::path> readableRoots(const std::vector<std::filesystem::path>& hidden_in) {
  namespace fs = std::filesystem;
  std::vector<fs::path> hidden;
  for (const auto& h : hidden_in) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(fs::absolute(h), ec);
    if (!ec) hidden.push_back(c.lexically_normal());
  }
  auto beneath = [](const fs::path& p, const fs::path& dir) {  // p is dir or inside it
    auto d = dir.begin(), q = p.begin();
    for (; d != dir.end(); ++d, ++q)
      if (q == p.end() || *d != *q) return false;
    return true;
  };
  std::vector<fs::path> out;
  std::function<void(const fs::path&)> walk = [&](const fs::path& dir) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
      const fs::path& p = it->path();
      std::error_code ec2;
      fs::path real = fs::weakly_canonical(p, ec2);
      if (ec2) continue;
      bool inside = false, above = false;
      for (const fs::path& h : hidden) {
        inside |= beneath(real, h);
        above |= !beneath(real, h) && beneath(h, real);
      }
      if (inside) continue;
      if (above) {
        // On the way to a hidden directory: its entries, not itself. A link
        // there is skipped (the real path is walked where it lies).
        if (!it->is_symlink(ec2)) walk(p);
        continue;
      }
      out.push_back(p);
    }
  };
  if (!hidden.empty()) walk("/");
  return out;
}

std::string confineSelf(const ConfinePolicy& policy) {
  std::string what;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    throw Error(std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno));
  what = "no_new_privs";
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (policy.drop_capabilities) what += dropCapabilities() ? " caps-dropped" : " caps-kept";
  if (policy.landlock) what += " " + installLandlock(policy);
  if (policy.seccomp) {
    installSeccomp(policy);
    what += " seccomp";
  }
  return what;
}

void protectMemoryFromSiblings() { ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

std::string limitAfterStartup(uint64_t memory_budget_bytes, bool address_space,
                              uint64_t extra_files) {
  std::string what;
  if (memory_budget_bytes) {
    uint64_t used = statusField(address_space ? "VmSize" : "VmData");
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(used + memory_budget_bytes);
    int res = address_space ? RLIMIT_AS : RLIMIT_DATA;
    if (::setrlimit(res, &rl) == 0)
      what += std::string(address_space ? "RLIMIT_AS=" : "RLIMIT_DATA=") +
              std::to_string((used + memory_budget_bytes) >> 20) + "MiB";
  }
  if (extra_files) {
    int highest = 2;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (struct dirent* e = ::readdir(d)) {
        int fd = std::atoi(e->d_name);
        if (fd > highest) highest = fd;
      }
      ::closedir(d);
    }
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(highest + 1 + extra_files);
    if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) {
      if (!what.empty()) what += " ";
      what += "RLIMIT_NOFILE=" + std::to_string(highest + 1 + extra_files);
    }
  }
  return what;
}

}  // namespace kb::sandbox
