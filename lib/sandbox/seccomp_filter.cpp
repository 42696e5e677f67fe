#include "sandbox/seccomp_filter.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace kb::sandbox {

SeccompFilter::SeccompFilter(uint32_t default_action) : ctx_(seccomp_init(default_action)) {
  if (!ctx_) throw Error("seccomp_init failed");
  // A call of another ABI (x32, int 0x80 on x86-64) ends the whole process,
  // not only its thread (libseccomp's default).
  seccomp_attr_set(ctx_, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
}

SeccompFilter::~SeccompFilter() {
  if (ctx_) seccomp_release(ctx_);
}

int SeccompFilter::add(uint32_t action, const char* name, std::initializer_list<scmp_arg_cmp> cmps) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return -1;
  addNumber(action, nr, cmps);
  return nr;
}

void SeccompFilter::addNumber(uint32_t action, int nr, std::initializer_list<scmp_arg_cmp> cmps) {
  int rc = seccomp_rule_add_array(ctx_, action, nr, static_cast<unsigned>(cmps.size()),
                                  cmps.size() ? cmps.begin() : nullptr);
  if (rc != 0 && rc != -EEXIST)
    throw Error("seccomp: cannot add a rule for system call " + std::to_string(nr) + ": " + std::strerror(-rc));
}

void SeccompFilter::load() {
  int rc = seccomp_load(ctx_);
  if (rc != 0) throw Error(std::string("seccomp_load: ") + std::strerror(-rc));
}

const std::vector<const char*>& adminSyscalls() {
  static const std::vector<const char*> names = {
      "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open",
      "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl",
      "add_key", "request_key", "init_module", "finit_module", "delete_module", "kexec_load",
      "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime",
      "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm", "quotactl",
      "fanotify_init", "memfd_secret", "move_mount", "open_tree", "fsopen", "fsmount",
      "fspick", "mount_setattr"};
  return names;
}

const std::vector<const char*>& otherProcessSyscalls() {
  static const std::vector<const char*> names = {"ptrace", "process_vm_readv", "process_vm_writev"};
  return names;
}

}  // namespace kb::sandbox
