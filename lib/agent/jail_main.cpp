// kb-agent-jail WORKSPACE -- PROGRAM ARGS...
//
// Confines itself, then execs PROGRAM (the agent's bash) inside WORKSPACE:
//   - a new network namespace (only a down loopback: no network at all),
//     through a user namespace when not privileged;
//   - a new PID and mount namespace with its own /proc, where the kernel
//     allows them: the program runs as the namespace's init and sees only
//     its own processes (not the server, other sessions' shells or the
//     candidate workers: their command lines, environments and maps), and
//     whatever it leaves running dies with it;
//   - no capabilities (the bounding set emptied too, so that an exec as
//     root gains none): root's CAP_SYS_PTRACE read other processes'
//     environments through /proc;
//   - Landlock: reads only below the system directories and WORKSPACE,
//     writes only below WORKSPACE (and /dev/null); other rollouts'
//     workspaces and the rest of the machine are out of reach;
//   - seccomp: socket() for anything but AF_UNIX fails with EACCES; ptrace
//     and another process's memory, and the kernel's administrative surface
//     (mount, namespaces, bpf, perf, io_uring, keyrings, modules, clocks, ...:
//     sandbox::adminSyscalls) fail with EPERM;
//   - rlimits (file size, address space, open files, core dumps off);
//   - no_new_privs.
// Landlock and seccomp go through lib/sandbox (landlock.h,
// seccomp_filter.h), as the candidate worker's confinement does (the
// administrative system calls are one list for both); the rulesets are this
// jail's. The environment is chosen by the parent. On a failure to confine,
// it prints "kb-agent-jail: ..." and exits 125 without running anything.
// `kb-agent-jail WORKSPACE --probe` confines itself the same way, prints the
// layers applied (e.g. "netns+pidns landlock-abi7 caps-dropped seccomp")
// and exits 0.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/confine.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp_filter.h"

#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
  fprintf(stderr, "kb-agent-jail: %s\n", what.c_str());
  _exit(125);
}

bool writeFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// The namespaces: network always (or the jail does not run), PID and mount
// with it where the kernel lets this process make them. Returns the layers
// made ("netns", "userns+netns", each with "+pidns" when the PID namespace
// was made too); `pid_ns` says whether it was.
std::string isolateNamespaces(bool& pid_ns) {
  const int more = CLONE_NEWPID | CLONE_NEWNS;
  pid_ns = unshare(CLONE_NEWNET | more) == 0;
  if (pid_ns || unshare(CLONE_NEWNET) == 0) return pid_ns ? "netns+pidns" : "netns";
  uid_t uid = getuid();
  gid_t gid = getgid();
  pid_ns = unshare(CLONE_NEWUSER | CLONE_NEWNET | more) == 0;
  if (!pid_ns && unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
    die(std::string("cannot create a network namespace: ") + strerror(errno));
  writeFile("/proc/self/setgroups", "deny");
  writeFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n");
  writeFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
  return pid_ns ? "userns+netns+pidns" : "userns+netns";
}

// The PID namespace applies to this process's children: fork its init, which
// goes on to confine itself and exec, and wait for it here, ending as it
// ends (the same exit code, or the same signal). The parent runs no agent
// code; a kill of the process group (the caller's time limit) reaches both.
void becomeNamespaceInit() {
  pid_t child = fork();
  if (child < 0) die(std::string("cannot start the namespace's first process: ") + strerror(errno));
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    // Its own /proc, showing this namespace's processes only; mounts made
    // here stay in this mount namespace.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      die(std::string("cannot make the mounts private: ") + strerror(errno));
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      die(std::string("cannot mount this namespace's /proc: ") + strerror(errno));
    return;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) die(std::string("waitpid: ") + strerror(errno));
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  _exit(128 + sig);
}

std::string landlock(const std::string& workspace) {
  const long abi = kb::sandbox::landlockAbi();
  if (abi < 1) return "";
  const uint64_t read = kb::sandbox::kLandlockReadRights;
  const uint64_t write = kb::sandbox::landlockWriteRights(abi);
  kb::sandbox::LandlockRuleset ruleset;
  ruleset.handled_fs = read | write;
  for (const char* dir : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc", "/opt",
                          "/proc", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random",
                          "/dev/zero", "/dev/tty"})
    ruleset.rules.push_back({dir, read});
  ruleset.rules.push_back({"/dev/null", read | LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0)});
  ruleset.rules.push_back({workspace, read | write});
  try {
    kb::sandbox::restrictSelf(ruleset, abi);
  } catch (const std::exception& e) {
    die(e.what());
  }
  return "landlock-abi" + std::to_string(abi);
}

void seccompFilter() {
  try {
    kb::sandbox::SeccompFilter f(SCMP_ACT_ALLOW);
    f.add(SCMP_ACT_ERRNO(EACCES), "socket", {SCMP_A0(SCMP_CMP_NE, AF_UNIX)});
    f.add(SCMP_ACT_ERRNO(EACCES), "socketpair", {SCMP_A0(SCMP_CMP_NE, AF_UNIX)});
    for (const char* n : kb::sandbox::otherProcessSyscalls()) f.add(SCMP_ACT_ERRNO(EPERM), n);
    for (const char* n : kb::sandbox::adminSyscalls()) f.add(SCMP_ACT_ERRNO(EPERM), n);
    f.load();
  } catch (const std::exception& e) {
    die(e.what());
  }
}

void limit(int resource, rlim_t value) {
  struct rlimit rl = {value, value};
  struct rlimit cur;
  if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < value) return;
  setrlimit(resource, &rl);
}

}  // namespace

int main(int argc, char** argv) {
  bool probe = argc == 3 && strcmp(argv[2], "--probe") == 0;
  if (!probe && (argc < 4 || strcmp(argv[2], "--") != 0)) {
    fprintf(stderr, "usage: kb-agent-jail WORKSPACE -- PROGRAM ARGS...\n");
    return 125;
  }
  std::string workspace = argv[1];
  if (chdir(workspace.c_str()) != 0) die("cannot enter " + workspace + ": " + strerror(errno));
  bool pid_ns = false;
  std::string layers = isolateNamespaces(pid_ns);
  if (pid_ns) becomeNamespaceInit();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs failed");
  std::string ll = landlock(workspace);
  layers += ll.empty() ? " no-landlock" : " " + ll;
  layers += kb::sandbox::dropCapabilities() ? " caps-dropped" : " caps-kept";
  seccompFilter();
  layers += " seccomp";
  limit(RLIMIT_FSIZE, 256ull << 20);
  limit(RLIMIT_AS, 8ull << 30);
  limit(RLIMIT_NOFILE, 1024);
  limit(RLIMIT_CORE, 0);
  limit(RLIMIT_NPROC, 512);
  if (probe) {
    printf("%s\n", layers.c_str());
    return 0;
  }
  execv(argv[3], argv + 3);
  die(std::string("cannot run ") + argv[3] + ": " + strerror(errno));
}
