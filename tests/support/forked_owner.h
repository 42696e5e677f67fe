// A forked child that owns something (a scratch directory, a worker) and is
// then SIGKILLed: how the tests stand in for an owner that dies without
// running a destructor (the OOM killer, a CI time limit).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

struct ForkedOwner {
  pid_t pid = -1;    // -1: fork failed
  std::string line;  // what the child reported ("" when it reported nothing)
};

// Runs `body` in a forked child. body calls report(line) once it owns what
// the test is about: the line comes back to the parent and the child then
// waits, body's locals alive, until killOwner. A body that returns without
// reporting ends the child with status 1.
inline ForkedOwner forkOwner(const std::function<void(const std::function<void(const std::string&)>& report)>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) {
    ::close(fds[0]);
    body([&](const std::string& line) {
      std::string l = line + "\n";
      (void)!::write(fds[1], l.data(), l.size());
      for (;;) ::pause();  // until killed
    });
    ::_exit(1);
  }
  ::close(fds[1]);
  std::string line;
  char c;
  while (::read(fds[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(fds[0]);
  return {pid, line};
}

// SIGKILLs the owner and reaps it; true when it died by that signal.
inline bool killOwner(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}
