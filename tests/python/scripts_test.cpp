// lib/python/scripts.h: a ScriptWorker's temporary folder goes with it,
// however it ends. (A capture worker SIGKILLed by kbsynth's stop left its
// kbtask-* folder in $TMPDIR: cli_conformance failed on it in CI.)
#include "python/scripts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../support/forked_owner.h"

namespace fs = std::filesystem;

namespace {

// A folder with `script`, made the scripts folder ($KB_SCRIPTS_DIR), and a
// folder made $TMPDIR, both removed at the end.
class ScriptWorkerTmp : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kb-scripts-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "scripts");
    fs::create_directories(root_ / "tmp");
    // Writes a file into $TMPDIR, says where, then waits for a line.
    std::ofstream(root_ / "scripts" / "leave_tmp.sh")
        << "d=$(mktemp -d \"$TMPDIR/kbtask-XXXXXX\")\n"
           "echo x > \"$d/file\"\n"
           "echo \"{\\\"tmp\\\": \\\"$TMPDIR\\\", \\\"made\\\": \\\"$d\\\"}\"\n"
           "read line\n"
           "exit 0\n";
    ::setenv("KB_SCRIPTS_DIR", (root_ / "scripts").c_str(), 1);
    old_tmp_ = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "";
    ::setenv("TMPDIR", (root_ / "tmp").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KB_SCRIPTS_DIR");
    if (old_tmp_.empty()) ::unsetenv("TMPDIR"); else ::setenv("TMPDIR", old_tmp_.c_str(), 1);
    fs::remove_all(root_);
  }
  // The folder the worker was given, after its first line.
  fs::path started(kb::python::ScriptWorker& w) {
    std::string line;
    EXPECT_EQ(w.readLine(line, 30), kb::python::ScriptWorker::Read::line);
    kb::Json j = kb::Json::parse(line);
    fs::path tmp = j.value("tmp", "");
    EXPECT_EQ(tmp.parent_path(), root_ / "tmp") << "not a folder of its own under $TMPDIR: " << tmp;
    EXPECT_TRUE(fs::exists(fs::path(j.value("made", "")) / "file"));
    return tmp;
  }
  fs::path root_;
  std::string old_tmp_;
};

TEST_F(ScriptWorkerTmp, RemovedWhenKilled) {
  kb::python::ScriptWorker w("bash", "leave_tmp.sh", {});
  fs::path tmp = started(w);
  w.kill();  // SIGKILL: the script cleans nothing up
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(ScriptWorkerTmp, RemovedWhenItEnds) {
  fs::path tmp;
  {
    kb::python::ScriptWorker w("bash", "leave_tmp.sh", {});
    tmp = started(w);
    EXPECT_EQ(w.wait(), 0);  // end of input: `read` returns, the script exits
  }
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(ScriptWorkerTmp, RemovedByTheDestructor) {
  fs::path tmp;
  {
    kb::python::ScriptWorker w("bash", "leave_tmp.sh", {});
    tmp = started(w);
  }
  EXPECT_FALSE(fs::exists(tmp));
}

// The process that made the worker is SIGKILLed (the OOM killer, a CI time
// limit): no destructor runs and its worker's folder stays. The next worker
// made under the same $TMPDIR removes it (core/scratch_dir.h).
TEST_F(ScriptWorkerTmp, ReclaimedWhenItsOwnerWasKilled) {
  ForkedOwner owner = forkOwner([](const auto& report) {
    kb::python::ScriptWorker w("bash", "leave_tmp.sh", {});
    std::string line;
    if (w.readLine(line, 30) == kb::python::ScriptWorker::Read::line) report(line);
  });
  ASSERT_GE(owner.pid, 0);
  ASSERT_TRUE(killOwner(owner.pid));
  ASSERT_FALSE(owner.line.empty()) << "the worker never started";
  fs::path abandoned = kb::Json::parse(owner.line).value("tmp", "");
  ASSERT_TRUE(fs::exists(abandoned)) << "the killed owner's folder should still be there: " << abandoned;

  kb::python::ScriptWorker w("bash", "leave_tmp.sh", {});
  fs::path tmp = started(w);
  EXPECT_NE(tmp, abandoned);
  EXPECT_FALSE(fs::exists(abandoned)) << "not reclaimed: " << abandoned;
  w.kill();
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

}  // namespace

namespace {

// The task scripts compute as kbcheck's reference does, in full float32:
// importing kbtask turns TF32 off for cuDNN and cuBLAS (PyTorch's default
// lets cuDNN use it). The flags are process-wide settings that a CPU-only
// torch reads and writes as well.
TEST(TaskScripts, ImportingKbtaskTurnsTf32Off) {
  const std::string cmd = "'" + kb::python::pythonPath() + "' -c \"import sys; sys.path.insert(0, '" +
                          kb::python::scriptsDir().string() +
                          "'); import torch; assert torch.backends.cudnn.allow_tf32; import kbtask; "
                          "sys.exit(1 if torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32 "
                          "else 0)\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
