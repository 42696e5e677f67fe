#include "solution/solution.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"

namespace fs = std::filesystem;

namespace {

class SolutionDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kb_solution_test_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "sol" / "kernels");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& content) {
    fs::create_directories((root_ / "sol" / rel).parent_path());
    std::ofstream(root_ / "sol" / rel, std::ios::binary) << content;
  }
  fs::path root_;
};

TEST_F(SolutionDirTest, ListsClassifiesAndHashes) {
  write("forward.cpp", "int x;\n");
  write("kernels/a.cu", "__global__ void k() {}\n");
  write("kernels/a.cuh", "#pragma once\n");
  write("README.md", "notes\n");
  kb::solution::Solution s = kb::solution::loadSolution(root_ / "sol");
  ASSERT_EQ(s.files.size(), 4u);
  auto sources = s.sources();
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0]->path, "forward.cpp");
  EXPECT_EQ(sources[1]->path, "kernels/a.cu");
  EXPECT_EQ(s.hash.rfind("sha256:", 0), 0u);

  std::string before = s.hash;
  write("README.md", "other notes\n");  // not code: same hash
  EXPECT_EQ(kb::solution::loadSolution(root_ / "sol").hash, before);
  write("kernels/a.cu", "__global__ void k() { }\n");
  EXPECT_NE(kb::solution::loadSolution(root_ / "sol").hash, before);
}

// The CUDA Agent paper's workspace: model_new.py with binding.cpp. Its
// harness files (utils/, model.py) are the judge's: listed, not code; the
// extension's sources are what the paper's compile.py globs.
TEST_F(SolutionDirTest, WorkspaceListsTheExtensionSourcesAndNotThePapersHarness) {
  write("model_new.py", "import cuda_extension\n");
  write("binding.cpp", "int b;\n");
  write("binding_registry.h", "#pragma once\n");
  write("kernels/k.cu", "__global__ void k() {}\n");
  write("kernels/k_binding.cpp", "int kb;\n");
  write("kernels/deeper/not_globbed.cu", "\n");
  write("model.py", "class Model: pass\n");
  write("utils/verification.py", "import torch\n");
  kb::solution::Solution s = kb::solution::loadSolution(root_ / "sol");
  EXPECT_EQ(s.format, kb::solution::Format::Workspace);
  EXPECT_EQ(s.entry, "model_new.py");
  std::vector<std::string> sources;
  for (const auto* f : s.workspaceSources()) sources.push_back(f->path);
  EXPECT_EQ(sources, (std::vector<std::string>{"binding.cpp", "kernels/k.cu", "kernels/k_binding.cpp"}));
  for (const auto& f : s.files) {
    if (f.path == "model.py" || f.path == "utils/verification.py") EXPECT_EQ(f.kind, kb::solution::SourceKind::Other);
    if (f.path == "binding_registry.h") EXPECT_EQ(f.kind, kb::solution::SourceKind::Header);
    if (f.path == "kernels/deeper/not_globbed.cu") EXPECT_EQ(f.kind, kb::solution::SourceKind::CudaSource);
  }
  const std::string before = s.hash;
  write("utils/verification.py", "import os\n");  // the paper's harness: not the candidate's code
  EXPECT_EQ(kb::solution::loadSolution(root_ / "sol").hash, before);
  write("binding_registry.h", "#pragma once\nint r;\n");
  EXPECT_NE(kb::solution::loadSolution(root_ / "sol").hash, before);

  fs::remove(root_ / "sol" / "binding.cpp");  // model_new.py alone: KernelBench's format
  EXPECT_EQ(kb::solution::loadSolution(root_ / "sol").format, kb::solution::Format::KernelBench);
  EXPECT_TRUE(kb::solution::loadSolution(root_ / "sol").workspaceSources().empty());
}

TEST_F(SolutionDirTest, MissingForwardIsUsageError) {
  write("kernels/a.cu", "\n");
  EXPECT_THROW(kb::solution::loadSolution(root_ / "sol"), kb::UsageError);
}

TEST_F(SolutionDirTest, MissingDirectoryIsUsageError) {
  EXPECT_THROW(kb::solution::loadSolution(root_ / "nope"), kb::UsageError);
}

TEST_F(SolutionDirTest, BinaryAndOversizedSourcesAreRejected) {
  write("forward.cpp", std::string("int x;\0\1", 8));
  EXPECT_THROW(kb::solution::loadSolution(root_ / "sol"), kb::UsageError);
  write("forward.cpp", std::string(2 << 20, 'x'));
  EXPECT_THROW(kb::solution::loadSolution(root_ / "sol"), kb::UsageError);
}

// Issue 38: one limit for every file of a solution, code or not (a 1 GB
// notes file rode along into a replay's trajectories).
TEST_F(SolutionDirTest, OversizedAndTooManyOtherFilesAreRejected) {
  write("forward.cpp", "int x;\n");
  write("notes.txt", std::string((1 << 20) + 1, 'n'));
  try {
    kb::solution::loadSolution(root_ / "sol");
    FAIL() << "a 1 MiB + 1 notes file was accepted";
  } catch (const kb::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt"), std::string::npos) << e.what();
  }
  std::filesystem::remove(root_ / "sol" / "notes.txt");
  for (int i = 0; i < 9; ++i) write("data/part" + std::to_string(i) + ".bin", std::string(1 << 20, 'd'));
  EXPECT_THROW(kb::solution::loadSolution(root_ / "sol"), kb::UsageError);  // 9 MiB in all
  std::filesystem::remove_all(root_ / "sol" / "data");
  for (int i = 0; i < 256; ++i) write("many/f" + std::to_string(i) + ".txt", "x");
  EXPECT_THROW(kb::solution::loadSolution(root_ / "sol"), kb::UsageError);  // 257 files
  std::filesystem::remove_all(root_ / "sol" / "many");
  EXPECT_NO_THROW(kb::solution::loadSolution(root_ / "sol"));
}

// Code file names reach compiler command lines (nvcc runs its steps through
// a shell): names that could run a command or be a flag are refused; other
// files may be named freely.
TEST_F(SolutionDirTest, CodeFileNamesThatReachCommandLinesArePlain) {
  std::filesystem::create_directories(root_ / "sol" / "kernels");
  write("forward.cpp", "int x;\n");
  write("notes (draft).txt", "anything\n");
  EXPECT_NO_THROW(kb::solution::loadSolution(root_ / "sol"));
  for (const char* bad : {"kernels/a$(touch pwned).cu", "kernels/b\" -DX=\"c.cu", "-wrapper=sh,-c,id.cpp",
                          "kernels/-x.cuh", "my kernel.cu"}) {
    write(bad, "int y;\n");
    EXPECT_THROW(kb::solution::loadSolution(root_ / "sol"), kb::UsageError) << bad;
    std::filesystem::remove(root_ / "sol" / bad);
  }
  write("kernels/ok_name-2+x.cu", "int z;\n");
  EXPECT_NO_THROW(kb::solution::loadSolution(root_ / "sol"));
}

TEST_F(SolutionDirTest, SymlinkOutsideIsReportedNotFollowed) {
  write("forward.cpp", "int x;\n");
  std::ofstream(root_ / "outside.h") << "secret\n";
  fs::create_symlink(root_ / "outside.h", root_ / "sol" / "kernels" / "leak.h");
  fs::create_symlink(root_ / "sol" / "forward.cpp", root_ / "sol" / "alias.cpp");
  kb::solution::Solution s = kb::solution::loadSolution(root_ / "sol");
  ASSERT_EQ(s.escapes.size(), 1u);
  EXPECT_EQ(s.escapes[0].path, "kernels/leak.h");
  for (const auto& f : s.files) EXPECT_NE(f.path, "kernels/leak.h");
}

}  // namespace
