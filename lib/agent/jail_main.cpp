// kb-agent-jail WORKSPACE -- PROGRAM ARGS...
//
// Confines itself, then execs PROGRAM (the agent's bash) inside WORKSPACE:
//   - a new network namespace (only a down loopback: no network at all),
//     through a user namespace when not privileged;
//   - Landlock: reads only below the system directories and WORKSPACE,
//     writes only below WORKSPACE (and /dev/null); other rollouts'
//     workspaces and the rest of the machine are out of reach;
//   - seccomp: socket() for anything but AF_UNIX fails with EACCES; ptrace,
//     mount, namespaces, bpf, perf, keyrings and module calls fail with EPERM;
//   - rlimits (file size, address space, open files, core dumps off);
//   - no_new_privs.
// The environment is chosen by the parent. On a failure to confine, it
// prints "kb-agent-jail: ..." and exits 125 without running anything.
// `kb-agent-jail WORKSPACE --probe` confines itself the same way, prints the
// layers applied (e.g. "netns landlock-abi7 seccomp") and exits 0.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/landlock_rights.h"

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

std::string isolateNetwork() {
  if (unshare(CLONE_NEWNET) == 0) return "netns";
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
    die(std::string("cannot create a network namespace: ") + strerror(errno));
  writeFile("/proc/self/setgroups", "deny");
  writeFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n");
  writeFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
  return "userns+netns";
}


std::string landlock(const std::string& workspace) {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return "";
  const uint64_t read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
                        LANDLOCK_ACCESS_FS_READ_DIR;
  const uint64_t write = kb::sandbox::landlockWriteRights(abi);
  struct landlock_ruleset_attr attr = {};
  attr.handled_access_fs = read | write;
  int rs = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (rs < 0) die(std::string("landlock_create_ruleset: ") + strerror(errno));
  auto allow = [&](const char* path, uint64_t access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return;  // a directory this system does not have
    struct landlock_path_beneath_attr pb = {};
    pb.parent_fd = fd;
    pb.allowed_access = access;
    // Files may only carry file rights.
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
      pb.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
                           LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
    if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0)
      die(std::string("landlock_add_rule ") + path + ": " + strerror(errno));
    close(fd);
  };
  for (const char* dir : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc", "/opt",
                          "/proc", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random",
                          "/dev/zero", "/dev/tty"})
    allow(dir, read);
  allow("/dev/null", read | LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0));
  allow(workspace.c_str(), read | write);
  if (syscall(SYS_landlock_restrict_self, rs, 0) != 0)
    die(std::string("landlock_restrict_self: ") + strerror(errno));
  close(rs);
  return "landlock-abi" + std::to_string(abi);
}

void seccompFilter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) die("seccomp_init failed");
  int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
                            SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 1,
                         SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  for (int sys : {SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
                  SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
                  SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(bpf), SCMP_SYS(perf_event_open),
                  SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key),
                  SCMP_SYS(init_module), SCMP_SYS(finit_module), SCMP_SYS(delete_module),
                  SCMP_SYS(kexec_load), SCMP_SYS(reboot), SCMP_SYS(swapon), SCMP_SYS(swapoff),
                  SCMP_SYS(userfaultfd), SCMP_SYS(io_uring_setup)})
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sys, 0);
  if (rc != 0) die("seccomp_rule_add failed");
  if (seccomp_load(ctx) != 0) die("seccomp_load failed");
  seccomp_release(ctx);
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
  std::string layers = isolateNetwork();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs failed");
  std::string ll = landlock(workspace);
  layers += ll.empty() ? " no-landlock" : " " + ll;
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
