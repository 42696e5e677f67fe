// Confinement a worker applies to itself once its start-up is done (libraries
// loaded, device initialised) and before any candidate code runs: no new
// privileges, no capabilities, Landlock (where the kernel has it) and a
// seccomp filter. docs/threat-model.md says what each layer stops.
//
// The seccomp filter (libseccomp), on x86-64 and aarch64:
//   - no sockets, no exec, no new processes (clone without CLONE_THREAD,
//     fork, vfork; clone3 answers ENOSYS so that glibc falls back to clone,
//     whose flags the filter can read): threads stay allowed unless the
//     policy refuses them (`threads`: a CPU worker's);
//   - no file creation or modification: open/openat/creat with O_WRONLY,
//     O_RDWR (unless allow_open_rdwr), O_CREAT, O_TRUNC or O_APPEND, and
//     unlink, rename, mkdir, link, symlink, chmod, chown, truncate, mknod;
//   - no signals to other processes (kill, tgkill, rt_sigqueueinfo only to
//     itself, no descriptor owners for SIGIO), no ptrace or
//     process_vm_readv/writev, no setsid/setpgid, no limits or scheduling of
//     other processes (and no new limits of its own: EPERM);
//   - the protocol descriptors 0-3 not copied, replaced, closed or read
//     ahead, the result channel (fd 3) not shortened or rewritten, no
//     asynchronous I/O; descriptor, signal and command arguments compared in
//     their low 32 bits, as the kernel reads them;
//   - nothing of the kernel's admin surface (mount, bpf, perf_event_open,
//     io_uring, userfaultfd, keyctl, modules, namespaces, reboot, ...).
// A forbidden call raises SIGSYS; the handler installed here writes one line
// "kb-sandbox: blocked system call NAME" to stderr and ends the process with
// SIGSYS, which the parent reads as a sandbox violation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kb::sandbox {

struct ConfinePolicy {
  // Landlock: directories below which files may be written (the working
  // directory; /dev for device nodes is added on CUDA). Writes anywhere else
  // fail with EACCES even where seccomp would let the open through.
  std::vector<std::filesystem::path> writable_dirs;
  // Landlock: directories beneath which nothing may be read (a shared
  // server's other clients' files: kbserve's state directory and build
  // cache), except beneath `readable_within_hidden` (the worker's own
  // library) and the writable directories. Landlock allows by rule only, so
  // every other path is allowed by a rule on each sibling along the way to a
  // hidden directory (readableRoots). Non-empty makes Landlock required:
  // confineSelf throws where the kernel cannot enforce it.
  std::vector<std::filesystem::path> hidden_dirs;
  std::vector<std::filesystem::path> readable_within_hidden;
  // Let open(O_RDWR) without O_CREAT/O_TRUNC/O_APPEND through seccomp (the
  // CUDA driver opens device nodes read-write; it does so during start-up,
  // so this stays off unless a GPU run shows it is needed later). Honoured
  // only where Landlock is in force (confineSelf): it is what then keeps
  // such opens to the writable directories.
  bool allow_open_rdwr = false;
  // New threads (clone with CLONE_THREAD). A GPU worker needs them (the CUDA
  // runtime, CUPTI). A CPU worker does not, and there a thread of the
  // candidate's is code that runs outside its call: it computed a timed
  // call's outputs after the call had returned, while the harness spoke to
  // kbprof and wrote the commit (a review by attack, 2026-12-08: 14x over
  // eager for an honest 0.04x GEMM). Off: every clone traps, threads too
  // (glibc's SIGEV_THREAD timers and AIO helpers included).
  bool threads = true;
  bool seccomp = true;
  bool landlock = true;
  bool drop_capabilities = true;
};

// What was applied, for the report: e.g. "no_new_privs caps-dropped
// landlock-abi7 seccomp". Throws kb::Error when a required layer fails
// (seccomp cannot be installed); Landlock is best-effort (absent on older
// kernels) and its absence shows in the description.
std::string confineSelf(const ConfinePolicy& policy);

// The paths that keep everything readable except beneath `hidden`: the
// entries of each directory on the way from / to a hidden directory, less
// that way itself and less a link that leads into or above a hidden one.
std::vector<std::filesystem::path> readableRoots(const std::vector<std::filesystem::path>& hidden);

// Drops every capability: effective, permitted, inheritable, ambient and
// the bounding set (so that an exec as root gains none). True when capset
// succeeded.
bool dropCapabilities();

// Marks this process non-dumpable, so that a same-user process without
// CAP_SYS_PTRACE cannot read its memory through /proc/PID/mem or ptrace.
// The verifying parent calls it before it starts any worker.
void protectMemoryFromSiblings();

// Lowers this process's rlimits after start-up, relative to what start-up
// used: memory (RLIMIT_AS when `address_space`, else RLIMIT_DATA, which
// leaves the CUDA driver's large PROT_NONE reservations alone) to current use
// plus `memory_budget_bytes`; open files to the highest open descriptor plus
// `extra_files`. Zero skips a limit. Returns a description for the report.
std::string limitAfterStartup(uint64_t memory_budget_bytes, bool address_space,
                              uint64_t extra_files);

// The line the SIGSYS handler prints, for the parent to find in the output.
inline constexpr const char* kBlockedSyscallMarker = "kb-sandbox: blocked system call ";

}  // namespace kb::sandbox
