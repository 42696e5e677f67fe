// A program that misbehaves on request, run by sandbox_test under the
// worker's confinement: `probe [--confine[=rdwr|=rdwr-no-landlock]] MODE [ARG]`
// (=rdwr: allow_open_rdwr; =rdwr-no-landlock: that, without Landlock).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "sandbox/confine.h"

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
  if (mode == "channel-reopen-rewrite") {  // a new open file of fd 3's file (no O_APPEND), then a rewrite at 0
    int fd = open("/proc/self/fd/3", O_RDWR);
    if (fd < 0) return 22;
    return pwrite(fd, "XX", 2, 0) == 2 ? 0 : 23;
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
