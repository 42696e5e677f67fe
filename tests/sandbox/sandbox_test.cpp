#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "sandbox/confine.h"
#include "core/error.h"
#include "core/process.h"

namespace fs = std::filesystem;

namespace {

std::string probePath() {
  const char* p = std::getenv("KB_PROBE");
  return p ? p : "";
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(probePath().empty()) << "KB_PROBE not set";
    dir_ = fs::temp_directory_path() /
           ("kb_sandbox_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "work");
  }
  void TearDown() override { fs::remove_all(dir_); }

  kb::ProcessResult run(std::vector<std::string> args, bool confine = true, double wall = 10) {
    kb::ProcessSpec spec;
    spec.argv = {probePath()};
    if (confine) spec.argv.push_back("--confine");
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = kb::scrubbedEnvironment({"PATH"}, {"HOME=" + (dir_ / "work").string()});
    spec.cwd = dir_ / "work";
    spec.limits.wall_seconds = wall;
    spec.limits.cpu_seconds = 5;
    spec.output_limit = 4096;
    spec.result_file = dir_ / "result.bin";
    spec.result_limit = 16;
    return kb::runProcess(spec);
  }
  // The same, with fd 0 a socket to this process (as kbprof's worker has
  // it): `ahead` is sent before the child reads anything, each line the
  // child writes is answered "a".
  kb::ProcessResult runOnSocket(std::vector<std::string> args, const std::string& ahead) {
    kb::ProcessSpec spec;
    spec.argv = {probePath()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = kb::scrubbedEnvironment({"PATH"}, {"HOME=" + (dir_ / "work").string()});
    spec.cwd = dir_ / "work";
    spec.limits.wall_seconds = 10;
    spec.limits.cpu_seconds = 5;
    spec.output_limit = 4096;
    spec.result_file = dir_ / "result.bin";
    spec.result_limit = 16;
    kb::WaitingProcess w(spec);
    w.send(ahead);
    return w.finish("", [](const std::string&) { return std::string("a"); });
  }
  std::string resultFile() {
    std::ifstream in(dir_ / "result.bin");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

bool blocked(const kb::ProcessResult& r, const std::string& name) {
  return r.end == kb::ProcessEnd::Signaled && r.signal == SIGSYS &&
         r.output.find(std::string(kb::sandbox::kBlockedSyscallMarker) + name) != std::string::npos;
}

TEST_F(SandboxTest, ExitCodesAndSignals) {
  auto r = run({"exit", "3"});
  EXPECT_EQ(r.end, kb::ProcessEnd::Exited);
  EXPECT_EQ(r.exit_code, 3);
  r = run({"segv"});
  EXPECT_EQ(r.end, kb::ProcessEnd::Signaled);
  EXPECT_EQ(kb::signalName(r.signal), "SIGSEGV");
  r = run({"abort"});
  EXPECT_EQ(kb::signalName(r.signal), "SIGABRT");
  EXPECT_EQ(kb::describeEnd(r), "killed by SIGABRT");
}

// A child's word on its stdin socket before finish() (the reference
// worker's "ready": ReferenceWorker::awaitReady): the line alone is taken,
// what follows it is the child's; an ended or silent child is told apart
// from one that spoke.
TEST(WaitingProcessTest, AwaitLineReadsOneLineAndTellsEndsAndSilence) {
  kb::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "printf 'ready\\nnext\\n' >&0; read x; echo \"got $x\""};
  spec.limits.wall_seconds = 10;
  spec.output_limit = 4096;
  kb::WaitingProcess talker(spec);
  EXPECT_EQ(talker.awaitLine(5), std::optional<std::string>("ready"));
  EXPECT_EQ(talker.awaitLine(5), std::optional<std::string>("next"));
  kb::ProcessResult r = talker.finish("go\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "got go\n");

  spec.argv = {"/bin/sh", "-c", "sleep 1"};
  kb::WaitingProcess silent(spec);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(silent.awaitLine(0.3), std::nullopt);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 3.0);
  EXPECT_FALSE(silent.ended());

  spec.argv = {"/bin/sh", "-c", "exit 4"};
  kb::WaitingProcess quitter(spec);
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(quitter.awaitLine(5), std::nullopt);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.0);
  EXPECT_EQ(quitter.finish("").exit_code, 4);
}

TEST_F(SandboxTest, WallClockAndCpuLimits) {
  auto r = run({"sleep", "30"}, true, 0.5);
  EXPECT_EQ(r.end, kb::ProcessEnd::TimedOut);
  EXPECT_LT(r.wall_seconds, 5.0);
  kb::ProcessSpec spec;
  spec.argv = {probePath(), "loop"};
  spec.limits.wall_seconds = 20;
  spec.limits.cpu_seconds = 1;
  r = kb::runProcess(spec);
  EXPECT_EQ(r.end, kb::ProcessEnd::Signaled);
  EXPECT_EQ(kb::signalName(r.signal), "SIGXCPU");
}

TEST_F(SandboxTest, FloodIsCutNotBuffered) {
  auto r = run({"flood", std::to_string(64 << 20)});
  EXPECT_EQ(r.end, kb::ProcessEnd::Exited);
  EXPECT_GE(r.output_bytes, 64ull << 20);  // plus the "confined:" line
  EXPECT_TRUE(r.output_truncated);
  EXPECT_LE(r.output.size(), 4096u);
}

TEST_F(SandboxTest, ResultChannelIsBounded) {
  auto r = run({"result", "0123456789abcdefXYZ"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.result_bytes, 19u);
  EXPECT_TRUE(r.result_truncated);
  std::ifstream in(dir_ / "result.bin");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "0123456789abcdef");
}

// fd 3 is a file the child appends to (core/process.h): what it wrote
// cannot be shortened, rewritten at an offset, mapped or read back.
TEST_F(SandboxTest, ResultChannelIsAppendOnly) {
  for (auto [mode, call] : std::vector<std::pair<std::string, std::string>>{
           {"channel-truncate", "ftruncate"},
           {"channel-fallocate", "fallocate"},
           {"channel-pwritev2", "pwritev2"},
           {"channel-pwrite", "pwrite64"},
           {"channel-clear-append", "fcntl"},
           {"channel-mmap", "mmap"},
           {"channel-dup-rewrite", "dup"},
           {"channel-dup2-rewrite", "dup2"},
           {"channel-dup3-rewrite", "dup3"}}) {
    auto r = run({mode});
    EXPECT_TRUE(blocked(r, call)) << mode << ": " << kb::describeEnd(r) << " " << r.output;
  }
  // A new open of the channel's file (through /proc/self/fd/3) has no
  // O_APPEND. The worker's default refuses the read-write open; with
  // allow_open_rdwr, Landlock refuses it (the file lies outside the writable
  // working directory), and without Landlock the option is not honoured.
  auto reopen = run({"channel-reopen-rewrite"});
  EXPECT_TRUE(blocked(reopen, "openat")) << kb::describeEnd(reopen) << " " << reopen.output;
  reopen = run({"--confine=rdwr-no-landlock", "channel-reopen-rewrite"}, false);
  EXPECT_TRUE(blocked(reopen, "openat")) << kb::describeEnd(reopen) << " " << reopen.output;
  reopen = run({"--confine=rdwr", "channel-reopen-rewrite"}, false);
  if (reopen.output.find("landlock-abi") != std::string::npos)
    EXPECT_EQ(reopen.exit_code, 22) << "reopened read-write under Landlock: " << reopen.output;
  else
    EXPECT_TRUE(blocked(reopen, "openat")) << kb::describeEnd(reopen) << " " << reopen.output;
  // The filter compares all 64 bits of an argument, the kernel reads an fd,
  // a signal or an fcntl command from the low 32 only: fd 3 | 1 << 32 is
  // fd 3 to the kernel and not 3 to an EQ or LE rule. The rules compare the
  // low half only (confine.cpp low32Is, protocolFd; SCMP_A0_32 does not do
  // it in libseccomp 2.5).
  for (auto [mode, call] : std::vector<std::pair<std::string, std::string>>{
           {"hibit-truncate", "ftruncate"},
           {"hibit-pwritev2", "pwritev2"},
           {"hibit-clear-append", "fcntl"},
           {"hibit-dup-rewrite", "dup"},
           {"hibit-close", "close"},
           {"hibit-sigaction", "rt_sigaction"},
           // Asynchronous I/O: fd and RWF_NOAPPEND travel in the iocb, out of the filter's sight.
           {"aio-rewrite", "io_setup"}}) {
    auto r = run({mode});  // appends RECORD01, then attacks it
    EXPECT_TRUE(blocked(r, call)) << mode << ": " << kb::describeEnd(r) << " " << r.output;
    EXPECT_EQ(resultFile(), "RECORD01") << mode << " rewrote the channel";
  }
  // Without the sandbox the descriptor itself refuses: write-only.
  auto r = run({"channel-read"}, false);
  EXPECT_EQ(r.exit_code, 19) << "the result channel was read back";
  r = run({"channel-mmap"}, false);
  EXPECT_EQ(r.exit_code, 18) << "the result channel was mapped";
}

// fd 0 (the socket to the parent) is read by recv only and never ahead of
// the harness (no MSG_PEEK): not by recvfrom with fd 0 | 1 << 32 (the
// low-half comparison above), io_submit IOCB_CMD_PREAD (no asynchronous
// I/O at all) or splice from fd 0.
TEST_F(SandboxTest, SocketToParentIsNotReadAheadOrReadOutsideRecv) {
  for (auto [mode, call] : std::vector<std::pair<std::string, std::string>>{
           {"hibit-peek", "recvfrom"}, {"aio-read-stdin", "io_setup"}, {"splice-stdin", "splice"}}) {
    auto r = runOnSocket({"--confine", mode}, "seed 1234\n");
    EXPECT_TRUE(blocked(r, call)) << mode << ": " << kb::describeEnd(r) << " " << r.output;
    EXPECT_EQ(r.output.find("seed 1234"), std::string::npos) << mode << ": " << r.output;
  }
}

// The parent's limits, priority and CPUs are out of reach (same uid: the
// kernel allows prlimit64 on it; setpriority and sched_setaffinity too,
// where the parent holds no more capabilities than the child, i.e. when it
// is not root). prlimit64 with a new limit on another process traps;
// setpriority and sched_setaffinity on another process are refused (EPERM).
TEST_F(SandboxTest, ParentLimitsAndSchedulingAreOutOfReach) {
  struct rlimit before;
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &before), 0);
  auto r = run({"parent-prlimit"});
  struct rlimit after;
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &after), 0);
  EXPECT_TRUE(blocked(r, "prlimit64")) << kb::describeEnd(r) << " " << r.output;
  EXPECT_EQ(after.rlim_max, before.rlim_max) << "the child lowered this process's RLIMIT_CORE";
  for (auto [mode, call, refused] : std::vector<std::tuple<std::string, std::string, int>>{
           {"parent-setpriority", "setpriority", 47}, {"user-setpriority", "setpriority", 47},
           {"parent-setaffinity", "sched_setaffinity", 49}}) {
    r = run({mode});
    EXPECT_TRUE(blocked(r, call) || r.exit_code == refused) << mode << ": " << kb::describeEnd(r) << " " << r.output;
  }
}

// The child's own limits stay as the parent set them: RLIMIT_CPU's soft
// limit (cpu_seconds, hard cpu_seconds + 1: core/process.cpp) cannot be
// raised to the hard one (refused, EPERM: a library that tries gets an
// error, not a verdict; the probe's exit 54).
TEST_F(SandboxTest, OwnLimitsCannotBeRaised) {
  auto r = run({"raise-cpu"});
  EXPECT_EQ(r.exit_code, 54) << kb::describeEnd(r) << " " << r.output;
  EXPECT_TRUE(run({"raise-cpu"}, false).ok()) << "unconfined, the probe raises it";
}

// Nothing outside the working directory is changed, extended attributes
// included: setxattrat (463), removexattrat (466), file_setattr (469) are
// newer than libseccomp 2.5.4's table, which cannot name them, and Landlock
// does not cover xattrs: the filter traps them by number.
TEST_F(SandboxTest, NoExtendedAttributesOutsideTheWorkingDirectory) {
  fs::path outside = dir_ / "outside.txt";
  std::ofstream(outside) << "x";
  auto r = run({"setxattrat", outside.string()});
  EXPECT_EQ(r.end, kb::ProcessEnd::Signaled) << kb::describeEnd(r) << " " << r.output;
  EXPECT_EQ(r.signal, SIGSYS);
  char v[8];
  EXPECT_LT(::getxattr(outside.c_str(), "user.kb_probe", v, sizeof v), 0) << "an xattr was set outside";
}

// Signals to the parent through a descriptor's owner (F_SETOWN on a pipe,
// FIOSETOWN on the socket): Landlock ABI >= 6 (scope signal) stops their
// delivery; without Landlock (older kernels: Debian 12's own 6.1 has no
// signal scoping) they would arrive, and SIGIO's default action ends the
// parent: the filter traps fcntl F_SETOWN/F_SETOWN_EX/F_SETSIG on any fd and
// ioctl FIOSETOWN/SIOCSPGRP/FIOASYNC.
std::atomic<int> g_signals{0};
TEST_F(SandboxTest, NoSignalsToTheParentThroughADescriptorOwner) {
  struct sigaction count {}, old_usr2{}, old_io{};
  count.sa_handler = [](int) { g_signals++; };
  sigemptyset(&count.sa_mask);
  ::sigaction(SIGUSR2, &count, &old_usr2);
  ::sigaction(SIGIO, &count, &old_io);
  for (std::string variant : {"--confine", "--confine=rdwr-no-landlock"}) {
    g_signals = 0;
    auto r = run({variant, "parent-sigio", std::to_string(SIGUSR2)}, false);
    ::usleep(100000);
    EXPECT_TRUE(blocked(r, "fcntl") || g_signals == 0)
        << variant << " F_SETOWN: " << g_signals << " signals arrived; " << kb::describeEnd(r) << " " << r.output;
    g_signals = 0;
    r = runOnSocket({variant, "parent-fiosetown"}, "");
    ::usleep(100000);
    EXPECT_TRUE(blocked(r, "ioctl") || g_signals == 0)
        << variant << " FIOSETOWN: " << g_signals << " signals arrived; " << kb::describeEnd(r) << " " << r.output;
  }
  ::sigaction(SIGUSR2, &old_usr2, nullptr);
  ::sigaction(SIGIO, &old_io, nullptr);
}

// Past the channel's bound under a file-size limit, the writer is stopped
// (SIGXFSZ, or EFBIG where it ignores that) and the file cut to the bound.
TEST_F(SandboxTest, ResultChannelStopsAWriterPastItsBound) {
  kb::ProcessSpec spec;
  spec.argv = {probePath(), "result", "0123456789abcdefXYZ"};
  spec.cwd = dir_ / "work";
  spec.limits.wall_seconds = 10;
  spec.limits.file_size_bytes = 4;  // raised to the channel's bound + 1
  spec.result_file = dir_ / "result.bin";
  spec.result_limit = 16;
  auto r = kb::runProcess(spec);
  EXPECT_TRUE(r.result_truncated);
  EXPECT_EQ(r.result_bytes, 17u);
  EXPECT_EQ(fs::file_size(dir_ / "result.bin"), 16u);
  spec.argv = {probePath(), "result", "0123456789abcdef"};
  r = kb::runProcess(spec);
  EXPECT_TRUE(r.ok()) << kb::describeEnd(r);
  EXPECT_FALSE(r.result_truncated);
  EXPECT_EQ(r.result_bytes, 16u);
}

TEST_F(SandboxTest, EnvironmentIsScrubbedAndCwdIsOwn) {
  ::setenv("KB_SECRET_TOKEN", "x", 1);
  ::setenv("LD_PRELOAD", "/nonexistent.so", 1);
  auto r = run({"env"}, false);
  ::unsetenv("LD_PRELOAD");
  EXPECT_EQ(r.output.find("KB_SECRET_TOKEN"), std::string::npos);
  EXPECT_EQ(r.output.find("LD_PRELOAD"), std::string::npos);
  EXPECT_NE(r.output.find("HOME=" + (dir_ / "work").string()), std::string::npos);
  r = run({"pwd"}, false);
  EXPECT_EQ(r.output, (dir_ / "work").string() + "\n");
}

TEST_F(SandboxTest, OnlyStandardDescriptorsAndResultChannelAreInherited) {
  int stray = ::open("/dev/null", O_RDONLY);  // no CLOEXEC: must still not leak
  auto r = run({"fds"}, false);
  ::close(stray);
  EXPECT_EQ(r.output, "0\n1\n2\n3\n");
}

TEST_F(SandboxTest, ThreadsStillWork) {
  auto r = run({"thread"});
  EXPECT_TRUE(r.ok()) << r.output;
}

TEST_F(SandboxTest, ForbiddenCallsEndWithSigsys) {
  EXPECT_TRUE(blocked(run({"fork"}), "clone")) << run({"fork"}).output;
  EXPECT_TRUE(blocked(run({"socket"}), "socket"));
  EXPECT_TRUE(blocked(run({"exec"}), "execve"));
  EXPECT_TRUE(blocked(run({"kill-parent"}), "kill"));
  auto r = run({"write", (dir_ / "escaped.txt").string()});
  EXPECT_TRUE(blocked(r, "openat")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "escaped.txt"));
  r = run({"write", "inside.txt"});
  EXPECT_TRUE(blocked(r, "openat"));
}

// No filter of its own: one that answers system calls in user space
// (SECCOMP_RET_USER_NOTIF) would let a candidate thread stand in for the
// harness's own calls on the protocol descriptors (a write reported done
// but never made, a forged one in its place).
TEST_F(SandboxTest, NoSeccompFilterOfItsOwn) {
  auto r = run({"seccomp-filter"});
  EXPECT_TRUE(blocked(r, "seccomp")) << kb::describeEnd(r) << " " << r.output;
  r = run({"prctl-seccomp"});
  EXPECT_TRUE(blocked(r, "prctl")) << kb::describeEnd(r) << " " << r.output;
  EXPECT_TRUE(run({"seccomp-filter"}, false).ok()) << "unconfined, the probe installs one";
}

TEST_F(SandboxTest, UnconfinedProbeCanDoIt) {
  // The same probes without confinement succeed: the tests above test the filter.
  EXPECT_TRUE(run({"fork"}, false).ok());
  EXPECT_TRUE(run({"write", (dir_ / "free.txt").string()}, false).ok());
  EXPECT_TRUE(fs::exists(dir_ / "free.txt"));
}

TEST_F(SandboxTest, ParentMemoryIsOutOfReach) {
  kb::sandbox::protectMemoryFromSiblings();
  auto r = run({"read-parent-mem"});
  EXPECT_EQ(r.end, kb::ProcessEnd::Exited);
  EXPECT_EQ(r.exit_code, 12) << "the confined child opened its parent's memory";
}

TEST_F(SandboxTest, MissingProgramIsSpawnFailure) {
  kb::ProcessSpec spec;
  spec.argv = {"/nonexistent/program"};
  auto r = kb::runProcess(spec);
  EXPECT_EQ(r.end, kb::ProcessEnd::SpawnFailed);
  EXPECT_NE(r.message.find("No such file"), std::string::npos) << r.message;
}

// The trusted helpers' runner (nvidia-smi, cuobjdump, the jail's probe):
// found on PATH, no shell (a ';' is an argument, not a command), stderr kept
// apart unless asked for, the group killed at the deadline.
TEST(ProcessHelperTest, RunHelperFindsProgramsAndPassesArgumentsAsTheyAre) {
  auto r = kb::runHelper({"sh", "-c", "printf '%s|' \"$0\" \"$1\"; echo oops >&2", "a;b", "$(c)"}, 10);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.output, "a;b|$(c)|");  // stderr discarded by default
  auto both = kb::runHelper({"sh", "-c", "echo out; echo err >&2"}, 10, /*discard_stderr=*/false);
  EXPECT_NE(both.output.find("err"), std::string::npos) << both.output;
  auto missing = kb::runHelper({"kb-no-such-helper-program"}, 10);
  EXPECT_EQ(missing.end, kb::ProcessEnd::SpawnFailed);
  EXPECT_NE(missing.message.find("not found on PATH"), std::string::npos) << missing.message;
  auto slow = kb::runHelper({"sleep", "30"}, 0.3);
  EXPECT_EQ(slow.end, kb::ProcessEnd::TimedOut);
}

TEST(ProcessHelperTest, FindOnPathSearchesInOrderAndNeverForAnEmptyPath) {
  EXPECT_EQ(kb::findOnPath("sh", "/nonexistent:/bin:/usr/bin"), fs::path("/bin/sh"));
  EXPECT_EQ(kb::findOnPath("sh", ""), fs::path());
  EXPECT_EQ(kb::findOnPath("kb-no-such-helper-program", "/bin:/usr/bin"), fs::path());
  EXPECT_EQ(kb::findOnPath("./x/y", "/bin"), fs::path("./x/y"));  // a path is not searched
}

// Output streamed to on_output whole, even past output_limit (lib/task's
// runScript parses a script's JSON lines this way).
TEST(ProcessHelperTest, OnOutputSeesEveryByteBeyondTheLimit) {
  kb::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "i=0; while [ $i -lt 1000 ]; do echo line$i; i=$((i+1)); done"};
  spec.output_limit = 10;
  std::string seen;
  spec.on_output = [&](const char* d, std::size_t n) { seen.append(d, n); };
  auto r = kb::runProcess(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.output.size(), 10u);
  EXPECT_TRUE(r.output_truncated);
  EXPECT_EQ(seen.size(), r.output_bytes);
  EXPECT_NE(seen.find("line999\n"), std::string::npos);
}

// A child left running (lib/python's ScriptWorker): its own group, stdout on
// the given descriptor, reaped by the caller.
TEST(ProcessHelperTest, StartProcessLeavesTheChildToTheCaller) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  kb::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo started; exec sleep 30"};
  spec.die_with_parent = false;
  int pid = kb::startProcess(spec, p[1]);
  ::close(p[1]);
  ASSERT_GT(pid, 0);
  char buf[16] = {0};
  ASSERT_EQ(::read(p[0], buf, 8), 8);
  EXPECT_EQ(std::string(buf, 8), "started\n");
  EXPECT_EQ(::getpgid(pid), pid);
  ::kill(-pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  ::close(p[0]);
  spec.argv = {"/nonexistent/program"};
  EXPECT_THROW(kb::startProcess(spec, 1), kb::Error);
}

}  // namespace

// kbserve's hiding (ConfinePolicy::hidden_dirs): beneath a hidden directory
// nothing can be read once confined, except the worker's own subdirectory;
// everything else stays readable, and the writable directory stays writable.
TEST(LandlockHiding, HiddenDirectoriesAreUnreadableAndTheRestIsNot) {
  fs::path root = fs::temp_directory_path() / ("kb_hide_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "state/work/other");
  fs::create_directories(root / "state/cache/mine");
  fs::create_directories(root / "visible");
  fs::create_directories(root / "work");
  std::ofstream(root / "state/journal.jsonl") << "another client's files\n";
  std::ofstream(root / "state/work/other/forward.cpp") << "secret\n";
  std::ofstream(root / "state/cache/mine/solution.so") << "mine\n";
  std::ofstream(root / "visible/data") << "public\n";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    kb::sandbox::ConfinePolicy p;
    p.seccomp = false;
    p.writable_dirs = {root / "work"};
    p.hidden_dirs = {root / "state"};
    p.readable_within_hidden = {root / "state/cache/mine"};
    try {
      kb::sandbox::confineSelf(p);
    } catch (const std::exception&) {
      ::_exit(77);  // no Landlock on this kernel
    }
    auto readable = [](const fs::path& f) {
      int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
      return fd >= 0;
    };
    int bad = 0;
    if (readable(root / "state/journal.jsonl")) bad |= 1;
    if (readable(root / "state/work/other/forward.cpp")) bad |= 2;
    if (::open((root / "state/work").c_str(), O_RDONLY | O_DIRECTORY) >= 0) bad |= 4;  // no listing either
    if (!readable(root / "state/cache/mine/solution.so")) bad |= 8;
    if (!readable(root / "visible/data")) bad |= 16;
    if (!readable("/etc/passwd")) bad |= 32;
    int w = ::open((root / "work/out").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (w < 0) bad |= 64;
    ::_exit(bad);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  fs::remove_all(root);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "Landlock is not available here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bits: 1 journal read, 2 other's file read, 4 hidden dir listed, 8 own dir "
                                       "unreadable, 16 visible unreadable, 32 /etc unreadable, 64 work unwritable";
}

TEST(LandlockHiding, ReadableRootsLeaveOutTheWayAndTheHiddenDirectory) {
  fs::path root = fs::temp_directory_path() / ("kb_roots_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "a/hidden");
  fs::create_directories(root / "a/sibling");
  fs::create_symlink(root / "a", root / "link_above");
  fs::create_symlink(root / "a/hidden", root / "link_inside");
  auto roots = kb::sandbox::readableRoots({root / "a/hidden"});
  auto has = [&](const fs::path& p) { return std::find(roots.begin(), roots.end(), p) != roots.end(); };
  EXPECT_TRUE(has(root / "a/sibling"));
  EXPECT_FALSE(has(root / "a/hidden"));
  EXPECT_FALSE(has(root / "a"));            // on the way: only its entries
  EXPECT_FALSE(has(root));
  EXPECT_FALSE(has(root / "link_above"));   // a link above the hidden one
  EXPECT_FALSE(has(root / "link_inside"));  // a link into it
  EXPECT_TRUE(has("/usr") || has("/etc"));
  fs::remove_all(root);
}
