// Descriptor and I/O calls of the POSIX headers (issue 35, class 6-static):
// every function <unistd.h>, <fcntl.h>, <aio.h>, <poll.h>, <sys/uio.h>,
// <sys/epoll.h>, <mqueue.h>, <sys/mman.h>, ... declare is file-io (those
// another rule names, fork or mprotect, stay that rule's), whatever the
// spelling: the 64-bit variants, glibc's bits/ headers, a using-declaration
// or a function pointer.
#include <aio.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ctime>

#include <kb/solution.h>

namespace {
ssize_t (*const g_reader)(int, void*, size_t) = ::read;  // expect: [file-io]
}  // namespace

KB_FORWARD(ctx) {
  char buf[16];
  iovec iov{buf, sizeof buf};
  aiocb cb = {};
  aio_read(&cb);  // expect: [file-io]
  aio_write(&cb);  // expect: [file-io]
  aiocb* list[1] = {&cb};
  lio_listio(LIO_NOWAIT, list, 1, nullptr);  // expect: [file-io]
  aio_error(&cb);  // expect: [file-io]
  readv(0, &iov, 1);  // expect: [file-io]
  writev(1, &iov, 1);  // expect: [file-io]
  preadv2(0, &iov, 1, 0, 0);  // expect: [file-io]
  pread64(0, buf, 1, 0);  // expect: [file-io]
  pwrite64(1, buf, 1, 0);  // expect: [file-io]
  pread(0, buf, 1, 0);  // expect: [file-io]
  lseek(0, 0, SEEK_SET);  // expect: [file-io]
  lseek64(0, 0, SEEK_SET);  // expect: [file-io]
  fcntl(0, F_GETFL);  // expect: [file-io]
  dup(0);  // expect: [file-io]
  dup2(0, 5);  // expect: [file-io]
  dup3(0, 5, 0);  // expect: [file-io]
  int fds[2];
  pipe(fds);  // expect: [file-io]
  pipe2(fds, 0);  // expect: [file-io]
  close(fds[0]);  // expect: [file-io]
  openat64(AT_FDCWD, "x", O_RDONLY);  // expect: [file-io]
  open64("x", O_RDONLY);  // expect: [file-io]
  splice(0, nullptr, 1, nullptr, 1, 0);  // expect: [file-io]
  pollfd p{0, POLLIN, 0};
  poll(&p, 1, 0);  // expect: [file-io]
  ppoll(&p, 1, nullptr, nullptr);  // expect: [file-io]
  fd_set set;
  select(1, &set, nullptr, nullptr, nullptr);  // expect: [file-io]
  int ep = epoll_create1(0);  // expect: [file-io]
  epoll_event ev{};
  epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);  // expect: [file-io]
  epoll_wait(ep, &ev, 1, 0);  // expect: [file-io]
  mqd_t q = mq_open("/q", O_RDONLY);  // expect: [file-io]
  mq_notify(q, nullptr);  // expect: [file-io]
  eventfd(0, 0);  // expect: [file-io]
  sigset_t mask;
  signalfd(-1, &mask, 0);  // expect: [file-io]
  ioctl(0, FIONREAD, buf);  // expect: [file-io]
  isatty(0);  // expect: [file-io]
  g_reader(0, buf, 1);
  (void)ctx;
  long pages = sysconf(_SC_PAGESIZE);  // fine: sysconf, getpagesize, getpid read facts
  (void)pages;
  (void)getpagesize();
  (void)getpid();
}
