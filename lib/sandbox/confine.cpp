#include "sandbox/confine.h"

#include "sandbox/landlock.h"
#include "sandbox/seccomp_filter.h"

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

// Adds `action` for syscall `name` when all `cmps` hold, and names the
// call for the SIGSYS handler.
void rule(SeccompFilter& f, uint32_t action, const char* name, std::initializer_list<scmp_arg_cmp> cmps = {}) {
  int nr = f.add(action, name, cmps);
  if (nr >= 0 && nr < kMaxSyscall) g_syscall_names[nr] = name;
}

// The kernel reads a descriptor, a signal number or an fcntl/ioctl command
// from the low 32 bits of its register, while a seccomp comparison sees all
// 64: fd 3 | 1 << 32 is fd 3 to ftruncate and not 3 to an EQ or LE rule
// (tests/sandbox hibit-*). So these compare the low half only.
scmp_arg_cmp low32Is(unsigned arg, uint32_t value) {
  return {arg, SCMP_CMP_MASKED_EQ, 0xffffffffull, value};
}
// One of the protocol descriptors, 0-3 (in the low half).
scmp_arg_cmp protocolFd(unsigned arg) { return {arg, SCMP_CMP_MASKED_EQ, 0xfffffffcull, 0}; }

void installSeccomp(const ConfinePolicy& policy) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = onSigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSYS, &sa, nullptr) != 0)
    throw Error(std::string("sigaction(SIGSYS): ") + std::strerror(errno));

  SeccompFilter f(SCMP_ACT_ALLOW);
  const uint32_t kTrap = SCMP_ACT_TRAP;
  const pid_t self = ::getpid();
  const auto self64 = static_cast<scmp_datum_t>(self);

  // Network: no sockets at all.
  for (const char* n : {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
                        "sendmmsg", "recvmmsg"})
    rule(f, kTrap, n);
  // Processes: no exec, no new processes; threads (CLONE_THREAD) are fine
  // where the policy allows them (a GPU worker), else every clone traps.
  for (const char* n : {"execve", "execveat", "fork", "vfork"}) rule(f, kTrap, n);
  if (policy.threads)
    rule(f, kTrap, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)});
  else
    rule(f, kTrap, "clone");
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
  rule(f, kTrap, "rt_sigaction", {low32Is(0, SIGSYS), SCMP_A1(SCMP_CMP_NE, 0)});
  for (const char* n : otherProcessSyscalls()) rule(f, kTrap, n);
  for (const char* n : {"tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "process_madvise", "kcmp",
                        "setsid", "setpgid"})
    rule(f, kTrap, n);
  // No filter of its own: one that answers system calls in user space
  // (SECCOMP_RET_USER_NOTIF, all threads with TSYNC) would let a candidate
  // thread stand in for the harness's calls on the protocol descriptors.
  rule(f, kTrap, "seccomp");
  rule(f, kTrap, "prctl", {low32Is(0, PR_SET_SECCOMP)});
  // Nor through a descriptor's owner: SIGIO (or F_SETSIG's signal) sent to
  // the owner when I/O is ready, on any descriptor (Landlock's signal scope,
  // ABI 6, stops it too, where the kernel has it).
  for (int cmd : {F_SETOWN, F_SETOWN_EX, F_SETSIG}) rule(f, kTrap, "fcntl", {low32Is(1, cmd)});
  for (unsigned long req : {FIOSETOWN, SIOCSPGRP, FIOASYNC}) rule(f, kTrap, "ioctl", {low32Is(1, req)});
  // Nor their limits or scheduling. prlimit64 on another process traps; a
  // new limit of its own (the parent set them: core/process.cpp, and the
  // worker's own lowering comes before this filter) is refused, so that a
  // library that tries gets an error, not a verdict.
  rule(f, kTrap, "prlimit64", {SCMP_A0(SCMP_CMP_NE, 0), SCMP_A2(SCMP_CMP_NE, 0)});
  rule(f, SCMP_ACT_ERRNO(EPERM), "prlimit64", {SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_NE, 0)});
  rule(f, SCMP_ACT_ERRNO(EPERM), "setrlimit");
  // (Only its own: PRIO_PROCESS and IOPRIO_WHO_PROCESS with who 0. A group
  // or a user with who 0 is every process of the group or the uid.)
  rule(f, SCMP_ACT_ERRNO(EPERM), "setpriority", {SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS)});
  rule(f, SCMP_ACT_ERRNO(EPERM), "setpriority", {SCMP_A1(SCMP_CMP_NE, 0)});
  rule(f, SCMP_ACT_ERRNO(EPERM), "ioprio_set", {SCMP_A0(SCMP_CMP_NE, 1 /* IOPRIO_WHO_PROCESS */)});
  rule(f, SCMP_ACT_ERRNO(EPERM), "ioprio_set", {SCMP_A1(SCMP_CMP_NE, 0)});
  for (const char* n : {"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"})
    rule(f, SCMP_ACT_ERRNO(EPERM), n, {SCMP_A0(SCMP_CMP_NE, 0)});
  // The protocol descriptors (0: the socket to the parent, 1-2: output,
  // 3: the result channel) cannot be replaced, closed, reconfigured or read
  // ahead: a record or an answer always travels on the channel the parent
  // made. (Writing on them stays possible; what the parent reads there is
  // checked against the protocol, and anything out of turn is hack_detected.)
  // Nor copied, to any number: a second descriptor of fd 3's file would take
  // fcntl F_SETFL (clearing O_APPEND on the shared open file) and rewrite
  // the channel at an offset (channel-dup*-rewrite in tests/sandbox).
  rule(f, kTrap, "dup", {protocolFd(0)});
  for (const char* n : {"dup2", "dup3"}) {
    rule(f, kTrap, n, {protocolFd(0)});  // copied from
    rule(f, kTrap, n, {protocolFd(1)});  // replaced
  }
  rule(f, kTrap, "close", {protocolFd(0)});
  rule(f, kTrap, "close_range", {protocolFd(0)});
  rule(f, kTrap, "shutdown", {protocolFd(0)});
  for (int cmd : {F_SETFD, F_SETFL, F_SETLEASE, F_NOTIFY, F_SETPIPE_SZ, F_DUPFD, F_DUPFD_CLOEXEC})
    rule(f, kTrap, "fcntl", {protocolFd(0), low32Is(1, cmd)});
  // The result channel (fd 3) is a file the child appends to (write-only,
  // O_APPEND: core/process.cpp): nothing may shorten it, punch holes in it,
  // write it at an offset (pwritev2's RWF_NOAPPEND) or reach it other than
  // by write/writev. Asynchronous I/O would carry the descriptor and the
  // RWF_ flags in memory the filter cannot read: there is none.
  constexpr uint32_t kResultFd = 3;
  for (const char* n : {"ftruncate", "fallocate", "pwrite64", "pwritev", "pwritev2", "ioctl", "sync_file_range"})
    rule(f, kTrap, n, {low32Is(0, kResultFd)});
  rule(f, kTrap, "mmap", {low32Is(4, kResultFd)});
  rule(f, kTrap, "splice", {low32Is(2, kResultFd)});
  rule(f, kTrap, "copy_file_range", {low32Is(2, kResultFd)});
  rule(f, kTrap, "sendfile", {low32Is(0, kResultFd)});
  rule(f, kTrap, "tee", {low32Is(1, kResultFd)});
  for (const char* n : {"io_setup", "io_submit"}) rule(f, kTrap, n);
  rule(f, kTrap, "recvfrom", {protocolFd(0), SCMP_A3(SCMP_CMP_MASKED_EQ, MSG_PEEK, MSG_PEEK)});
  rule(f, kTrap, "recvmsg", {protocolFd(0), SCMP_A2(SCMP_CMP_MASKED_EQ, MSG_PEEK, MSG_PEEK)});
  // The socket to the parent (fd 0) is spoken on with send/recv only (the
  // harness's calls, profile/timing.cpp); read() or write() on it, or a
  // splice or sendfile through it, is not the harness's.
  for (const char* n : {"read", "readv", "pread64", "preadv", "preadv2", "write", "writev", "pwrite64", "pwritev",
                        "pwritev2"})
    rule(f, kTrap, n, {low32Is(0, 0)});
  rule(f, kTrap, "splice", {low32Is(0, 0)});
  rule(f, kTrap, "splice", {low32Is(2, 0)});
  rule(f, kTrap, "sendfile", {low32Is(0, 0)});
  // Terminal injection.
  rule(f, kTrap, "ioctl", {low32Is(1, TIOCSTI)});
  // Calls newer than libseccomp's table, which it cannot name: extended
  // attributes and file attributes set by path (setxattrat 463,
  // removexattrat 466, file_setattr 469; Landlock does not cover them) and
  // open_tree_attr (467, the mount API). These numbers are the same on
  // every architecture (unified since 424).
  for (int nr : {463, 466, 467, 469}) f.addNumber(kTrap, nr);
  // The kernel's administrative surface.
  for (const char* n : adminSyscalls()) rule(f, kTrap, n);

  f.load();
}

// ---- Landlock -----------------------------------------------------------------

// Writes only below the writable directories; with hidden directories, reads
// everywhere but there too (readableRoots), the worker's own library excepted.
std::string installLandlock(const ConfinePolicy& policy) {
  const bool hide = !policy.hidden_dirs.empty();
  const long abi = landlockAbi();
  if (abi < 1) {
    if (hide)
      throw Error(
          "Landlock is not available (kernel 5.13 or later with the landlock LSM enabled; a container's seccomp "
          "profile may block it), and files must be hidden from this worker: other candidates' result channels "
          "and builds (docs/threat-model.md row 37)");
    return "landlock-unavailable";
  }
  const uint64_t write_rights = landlockWriteRights(abi);
  const uint64_t read_rights = hide ? kLandlockReadRights : 0;
  LandlockRuleset ruleset;
  ruleset.handled_fs = write_rights | read_rights;
  ruleset.deny_tcp = true;
  ruleset.scope_ipc = true;
  for (const auto& dir : policy.writable_dirs) ruleset.rules.push_back({dir, write_rights | read_rights});
  const size_t first_read_rule = ruleset.rules.size();
  if (hide) {
    for (const auto& p : readableRoots(policy.hidden_dirs)) ruleset.rules.push_back({p, kLandlockReadRights});
    for (const auto& p : policy.readable_within_hidden) ruleset.rules.push_back({p, kLandlockReadRights});
  }
  std::vector<bool> taken;
  try {
    taken = restrictSelf(ruleset, abi);
  } catch (const Error& e) {
    if (hide) throw;
    return std::string("landlock-failed(") + e.what() + ")";
  }
  std::string what = "landlock-abi" + std::to_string(abi);
  if (hide) {
    size_t read_rules = 0;
    for (size_t i = first_read_rule; i < taken.size(); ++i) read_rules += taken[i] ? 1 : 0;
    what += " landlock-hidden(" + std::to_string(policy.hidden_dirs.size()) + " dirs, " + std::to_string(read_rules) +
            " read rules)";
  }
  return what;
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

// ---- capabilities -----------------------------------------------------------

bool dropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  std::memset(data, 0, sizeof data);
  return ::syscall(SYS_capset, &header, data) == 0;
}

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
  std::string landlock = policy.landlock ? installLandlock(policy) : "";
  if (!landlock.empty()) what += " " + landlock;
  if (policy.seccomp) {
    // allow_open_rdwr leans on Landlock to keep read-write opens inside the
    // writable directories: without it, a read-write open of any file the
    // worker can name (the result channel's, through /proc/self/fd/3, has
    // no O_APPEND) would rewrite it. So without Landlock it is not honoured.
    ConfinePolicy filter = policy;
    if (filter.allow_open_rdwr && landlock.rfind("landlock-abi", 0) != 0) {
      filter.allow_open_rdwr = false;
      what += " open-rdwr-refused(no-landlock)";
    }
    installSeccomp(filter);
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
