// A program that misbehaves on request, run by sandbox_test under the
// worker's confinement: `probe [--confine[=rdwr|=rdwr-no-landlock]] MODE [ARG]`
// (=rdwr: allow_open_rdwr; =rdwr-no-landlock: that, without Landlock).
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <linux/aio_abi.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "sandbox/confine.h"

// A descriptor or small integer argument with bits above 32 set: the kernel
// reads an int (or unsigned int) argument from the low half only, a seccomp
// comparison sees all 64 bits.
constexpr long kHigh = 1L << 32;

// SIGSYS handler for hibit-sigaction: a trapped call returns instead of ending the process.
volatile sig_atomic_t g_caught = 0;
void onCaught(int) { g_caught = 1; }
extern "C" void probeRestorer();
asm(".text\n.globl probeRestorer\nprobeRestorer:\n  mov $15, %rax\n  syscall\n");

int main(int argc, char** argv) {
  int i = 1;
  bool confine = false;
  std::string variant;
  if (i < argc && std::strncmp(argv[i], "--confine", 9) == 0) {
    confine = true;
    if (argv[i][9] == '=') variant = argv[i] + 10;
    ++i;
  }
  if (i >= argc) return 2;
  std::string mode = argv[i];
  const char* arg = i + 1 < argc ? argv[i + 1] : "";
  if (confine) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return 3;
    kb::sandbox::ConfinePolicy policy;
    policy.writable_dirs = {cwd};
    policy.allow_open_rdwr = variant.rfind("rdwr", 0) == 0;
    policy.landlock = variant != "rdwr-no-landlock";
    std::string what = kb::sandbox::confineSelf(policy);
    std::fprintf(stderr, "confined: %s\n", what.c_str());
  }
  if (mode == "exit") return std::atoi(arg);
  if (mode == "segv") {
    volatile int* p = nullptr;
    return *p;
  }
  if (mode == "abort") std::abort();
  if (mode == "loop") {
    volatile unsigned long n = 0;
    for (;;) n = n + 1;
  }
  if (mode == "sleep") {
    sleep(static_cast<unsigned>(std::atoi(arg)));
    return 0;
  }
  if (mode == "flood") {
    static char buf[65536];
    std::memset(buf, 'x', sizeof buf);
    long long left = std::atoll(arg);
    while (left > 0) {
      ssize_t w = write(1, buf, left < (long long)sizeof buf ? left : sizeof buf);
      if (w <= 0) return 4;
      left -= w;
    }
    return 0;
  }
  if (mode == "result") {  // writes ARG to the result channel (fd 3)
    return write(3, arg, std::strlen(arg)) == (ssize_t)std::strlen(arg) ? 0 : 5;
  }
  // Ways to rewrite what is already on the result channel (fd 3, an
  // append-only file): each must be refused by the sandbox or do no harm.
  if (mode == "channel-truncate") return ftruncate(3, 0) == 0 ? 0 : 13;
  if (mode == "channel-fallocate") return fallocate(3, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4) == 0 ? 0 : 14;
  if (mode == "channel-pwritev2") {
    struct iovec v{const_cast<char*>("XX"), 2};
    return pwritev2(3, &v, 1, 0, 0x20 /* RWF_NOAPPEND */) == 2 ? 0 : 15;
  }
  if (mode == "channel-pwrite") return pwrite(3, "XX", 2, 0) == 2 ? 0 : 16;
  if (mode == "channel-clear-append") return fcntl(3, F_SETFL, 0) == 0 ? 0 : 17;
  if (mode == "channel-mmap") {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0);
    return p != MAP_FAILED ? 0 : 18;
  }
  if (mode == "channel-dup-rewrite") {  // a second descriptor of fd 3's file, O_APPEND cleared on it, then a rewrite at 0
    int fd = dup(3);
    if (fd < 0 || fcntl(fd, F_SETFL, 0) != 0) return 20;
    return pwrite(fd, "XX", 2, 0) == 2 ? 0 : 21;
  }
  if (mode == "channel-dup2-rewrite" || mode == "channel-dup3-rewrite") {  // the same through a copy at a high number
    int fd = mode == "channel-dup2-rewrite" ? dup2(3, 50) : dup3(3, 50, 0);
    if (fd < 0 || fcntl(fd, F_SETFL, 0) != 0) return 20;
    return pwrite(fd, "XX", 2, 0) == 2 ? 0 : 21;
  }
  if (mode == "seccomp-filter" || mode == "prctl-seccomp") {  // a filter of its own (allow-all here; a
    // SECCOMP_RET_USER_NOTIF one would let a candidate thread answer the harness's own calls)
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog{1, allow};
    long rc = mode == "seccomp-filter" ? syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)
                                       : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
    return rc == 0 ? 0 : 64;
  }
  if (mode == "channel-reopen-rewrite") {  // a new open file of fd 3's file (no O_APPEND), then a rewrite at 0
    int fd = open("/proc/self/fd/3", O_RDWR);
    if (fd < 0) return 22;
    return pwrite(fd, "XX", 2, 0) == 2 ? 0 : 23;
  }
  // The same attacks, the descriptor or command passed with a high bit set;
  // each first appends a record (RECORD01) for the attack to rewrite.
  if ((mode.rfind("hibit-", 0) == 0 && mode != "hibit-peek") || mode == "aio-rewrite")
    if (write(3, "RECORD01", 8) != 8) return 29;
  if (mode == "hibit-truncate") return syscall(SYS_ftruncate, kHigh | 3, 0) == 0 ? 0 : 30;
  if (mode == "hibit-pwritev2") {
    struct iovec v{const_cast<char*>("XX"), 2};
    return syscall(SYS_pwritev2, kHigh | 3, &v, 1, 0, 0, 0x20 /* RWF_NOAPPEND */) == 2 ? 0 : 31;
  }
  if (mode == "hibit-clear-append") {  // fcntl(3, F_SETFL, 0) through either argument, then a rewrite at 0
    if (syscall(SYS_fcntl, kHigh | 3, F_SETFL, 0) != 0 && syscall(SYS_fcntl, 3, kHigh | F_SETFL, 0) != 0) return 32;
    return lseek(3, 0, SEEK_SET) == 0 && write(3, "XX", 2) == 2 ? 0 : 33;
  }
  if (mode == "hibit-dup-rewrite") {  // a second writable descriptor of fd 3's file
    int fd = static_cast<int>(syscall(SYS_dup, kHigh | 3));
    if (fd < 0 || fcntl(fd, F_SETFL, 0) != 0) return 34;
    return pwrite(fd, "XX", 2, 0) == 2 ? 0 : 35;
  }
  if (mode == "hibit-close") return syscall(SYS_close, kHigh | 3) == 0 && fcntl(3, F_GETFD) < 0 ? 0 : 36;
  if (mode == "hibit-peek") {  // reads ahead on fd 0 (a socket from the parent), leaving the bytes there
    char buf[64];
    ssize_t n = syscall(SYS_recvfrom, kHigh | 0, buf, sizeof buf, MSG_PEEK, nullptr, nullptr);
    if (n <= 0) return 37;
    std::printf("peeked: %.*s\n", static_cast<int>(n), buf);
    return 0;
  }
  if (mode == "hibit-sigaction") {  // replaces the SIGSYS handler, then survives a trapped call
    struct {
      void (*handler)(int);
      unsigned long flags;
      void (*restorer)();
      unsigned long mask;
    } act{onCaught, 0x04000000 /* SA_RESTORER */, probeRestorer, 0};
    if (syscall(SYS_rt_sigaction, kHigh | SIGSYS, &act, nullptr, 8) != 0) return 38;
    syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    return g_caught ? 0 : 39;
  }
  // Asynchronous I/O: the descriptor and the flags travel in memory.
  if (mode == "aio-rewrite") {  // io_submit IOCB_CMD_PWRITE on fd 3 at offset 0, RWF_NOAPPEND
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, 1, &ctx) != 0) return 40;
    static char data[] = "XX";
    struct iocb cb;
    std::memset(&cb, 0, sizeof cb);
    cb.aio_fildes = 3;
    cb.aio_lio_opcode = IOCB_CMD_PWRITE;
    cb.aio_buf = reinterpret_cast<uintptr_t>(data);
    cb.aio_nbytes = 2;
    cb.aio_offset = 0;
    cb.aio_rw_flags = 0x20;  // RWF_NOAPPEND
    struct iocb* list[1] = {&cb};
    if (syscall(SYS_io_submit, ctx, 1, list) != 1) return 41;
    struct io_event ev;
    if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, nullptr) != 1) return 42;
    return ev.res == 2 ? 0 : 43;
  }
  if (mode == "aio-read-stdin") {  // io_submit IOCB_CMD_PREAD on fd 0: a read() the filter does not see
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, 1, &ctx) != 0) return 40;
    static char data[64];
    struct iocb cb;
    std::memset(&cb, 0, sizeof cb);
    cb.aio_fildes = 0;
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_buf = reinterpret_cast<uintptr_t>(data);
    cb.aio_nbytes = sizeof data;
    struct iocb* list[1] = {&cb};
    if (syscall(SYS_io_submit, ctx, 1, list) != 1) return 41;
    struct io_event ev;
    if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, nullptr) != 1) return 42;
    if (ev.res <= 0) return 43;
    std::printf("read: %.*s\n", static_cast<int>(ev.res), data);
    return 0;
  }
  // Reaching the parent without signals or ptrace.
  if (mode == "parent-prlimit") {  // lowers the parent's RLIMIT_CORE hard limit by one
    struct rlimit old, lower;
    if (prlimit(getppid(), RLIMIT_CORE, nullptr, &old) != 0) return 44;
    lower = {old.rlim_cur < old.rlim_max - 1 ? old.rlim_cur : old.rlim_max - 1, old.rlim_max - 1};
    return prlimit(getppid(), RLIMIT_CORE, &lower, nullptr) == 0 ? 0 : 45;
  }
  if (mode == "parent-setpriority") {  // renices the parent (to its own value: the permission is what counts)
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, getppid());
    if (errno) return 46;
    if (setpriority(PRIO_PROCESS, getppid(), prio) == 0) return 0;
    std::perror("setpriority");
    return 47;
  }
  if (mode == "user-setpriority") {  // renices every process of its uid (to their own value for the parent)
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, getppid());
    if (errno) return 46;
    if (setpriority(PRIO_USER, 0, prio) == 0 || setpriority(PRIO_PGRP, 0, prio) == 0) return 0;
    std::perror("setpriority");
    return 47;
  }
  if (mode == "parent-setaffinity") {  // pins the parent (to its own mask)
    cpu_set_t set;
    if (sched_getaffinity(getppid(), sizeof set, &set) != 0) return 48;
    if (sched_setaffinity(getppid(), sizeof set, &set) == 0) return 0;
    std::perror("sched_setaffinity");
    return 49;
  }
  if (mode == "splice-stdin") {  // reads fd 0 into a pipe: a read() the filter does not see
    int p[2];
    if (pipe(p) != 0) return 59;
    ssize_t n = splice(0, nullptr, p[1], nullptr, 64, 0);
    char buf[64];
    if (n <= 0 || (n = read(p[0], buf, sizeof buf)) <= 0) return 60;
    std::printf("spliced: %.*s\n", static_cast<int>(n), buf);
    return 0;
  }
  if (mode == "parent-fiosetown") {  // SIGIO to the parent when its next answer reaches fd 0
    int pid = getppid(), one = 1;
    if (ioctl(0, FIOSETOWN, &pid) != 0 || ioctl(0, FIOASYNC, &one) != 0) return 61;
    char buf[64];
    if (send(0, "q\n", 2, MSG_NOSIGNAL) != 2) return 62;
    for (ssize_t n; (n = recv(0, buf, sizeof buf, 0)) > 0;)
      if (std::memchr(buf, 'a', static_cast<size_t>(n))) return 0;
    return 63;
  }
  if (mode == "parent-sigio") {  // a signal (ARG, default SIGURG) to the parent through F_SETOWN + O_ASYNC
    int p[2];
    if (pipe(p) != 0) return 50;
    int sig = *arg ? std::atoi(arg) : SIGURG;
    if (fcntl(p[0], F_SETOWN, getppid()) != 0 || fcntl(p[0], F_SETSIG, sig) != 0 ||
        fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK) != 0)
      return 51;
    return write(p[1], "x", 1) == 1 ? 0 : 52;
  }
  if (mode == "raise-cpu") {  // raises its own RLIMIT_CPU soft limit to the hard one
    struct rlimit rl;
    if (getrlimit(RLIMIT_CPU, &rl) != 0 || rl.rlim_cur == rl.rlim_max) return 53;
    rl.rlim_cur = rl.rlim_max;
    return setrlimit(RLIMIT_CPU, &rl) == 0 ? 0 : 54;
  }
  if (mode == "setxattrat") {  // an extended attribute on ARG, a file outside the working directory
    struct {
      unsigned long long value;
      unsigned int size, flags;
    } args{reinterpret_cast<uintptr_t>("x"), 1, 0};
    return syscall(463 /* setxattrat */, AT_FDCWD, arg, 0, "user.kb_probe", &args, sizeof args) == 0 ? 0 : 55;
  }

  if (mode == "channel-read") {  // reads back what was written (unconfined: fails, the descriptor is write-only)
    char c;
    return pread(3, &c, 1, 0) == 1 ? 0 : 19;
  }
  if (mode == "env") {
    for (char** e = environ; *e; ++e) std::printf("%s\n", *e);
    return 0;
  }
  if (mode == "pwd") {
    char cwd[4096];
    std::printf("%s\n", getcwd(cwd, sizeof cwd));
    return 0;
  }
  if (mode == "thread") {
    int x = 0;
    std::thread t([&] { x = 42; });
    t.join();
    return x == 42 ? 0 : 6;
  }
  if (mode == "fork") {
    pid_t p = fork();
    if (p == 0) _exit(0);
    if (p > 0) waitpid(p, nullptr, 0);
    return p > 0 ? 0 : 7;
  }
  if (mode == "socket") return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? 0 : 8;
  if (mode == "exec") {
    execl("/bin/true", "true", (char*)nullptr);
    return 9;
  }
  if (mode == "write") {  // ARG: a path to create
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 10;
    close(fd);
    return 0;
  }
  if (mode == "kill-parent") return kill(getppid(), SIGKILL) == 0 ? 0 : 11;
  if (mode == "read-parent-mem") {
    std::string path = "/proc/" + std::to_string(getppid()) + "/mem";
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return 12;
    close(fd);
    return 0;  // opened: a failure of the sandbox
  }
  if (mode == "fds") {  // lists open descriptors
    for (int fd = 0; fd < 64; ++fd)
      if (fcntl(fd, F_GETFD) >= 0) std::printf("%d\n", fd);
    return 0;
  }
  return 2;
}
