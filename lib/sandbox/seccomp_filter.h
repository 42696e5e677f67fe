// A seccomp filter built by system call name (libseccomp), written once for
// both confined processes: the candidate worker (confine.cpp: a forbidden
// call traps) and the agent's bash (lib/agent/jail_main.cpp: it fails with
// an errno). A name this architecture or libseccomp lacks is skipped.
#pragma once

#include <seccomp.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace kb::sandbox {

class SeccompFilter {
 public:
  explicit SeccompFilter(uint32_t default_action);  // kb::Error when libseccomp fails
  ~SeccompFilter();
  SeccompFilter(const SeccompFilter&) = delete;
  SeccompFilter& operator=(const SeccompFilter&) = delete;

  // `action` for `name` when all `cmps` hold. Returns the call's number, or
  // -1 when this system has no such call. kb::Error when libseccomp refuses.
  int add(uint32_t action, const char* name, std::initializer_list<scmp_arg_cmp> cmps = {});
  // The same by number, for calls newer than libseccomp's table.
  void addNumber(uint32_t action, int nr, std::initializer_list<scmp_arg_cmp> cmps = {});
  // Loads it into this process (and what it starts). kb::Error on failure.
  void load();

 private:
  scmp_filter_ctx ctx_ = nullptr;
};

// The kernel's administrative surface, which neither confined process has
// any use for: mounts, namespaces, bpf, perf, io_uring, keyrings, modules,
// kexec, reboot, swap, clocks, host names, raw I/O ports, quotas, fanotify,
// the new mount API.
const std::vector<const char*>& adminSyscalls();

// Reaching into another process: ptrace and reading or writing its memory.
const std::vector<const char*>& otherProcessSyscalls();

}  // namespace kb::sandbox
