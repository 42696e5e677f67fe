#include "core/scratch_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "../support/forked_owner.h"

namespace fs = std::filesystem;

namespace {

// A private parent for each test, so that no other run's directories count.
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    parent_ = fs::temp_directory_path() /
              ("kb_scratch_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(parent_);
    fs::create_directories(parent_);
  }
  void TearDown() override { fs::remove_all(parent_); }
  fs::path parent_;
};

TEST_F(ScratchDirTest, InUseIsNeverReclaimed) {
  kb::ScratchDir d = kb::makeScratchDir(parent_, "kbcheck-worker");
  ASSERT_TRUE(fs::is_directory(d.path));
  EXPECT_TRUE(fs::exists(d.path / "owner.lock"));
  EXPECT_EQ(d.path.parent_path(), parent_);
  // The same process, through another open file: still held.
  EXPECT_TRUE(kb::reclaimAbandonedScratchDirs(parent_, "kbcheck-worker").empty());
  EXPECT_TRUE(fs::is_directory(d.path));
  // A second directory's making reclaims nothing of the first.
  kb::ScratchDir e = kb::makeScratchDir(parent_, "kbcheck-worker");
  EXPECT_TRUE(fs::is_directory(d.path));
  EXPECT_NE(d.path, e.path);
}

TEST_F(ScratchDirTest, ReleasedIsReclaimedByTheNextMake) {
  kb::ScratchDir d = kb::makeScratchDir(parent_, "kbcheck-worker");
  std::ofstream(d.path / "result.bin") << std::string(4096, 'x');
  fs::path left = d.path;
  d.owner.reset();  // what the end of the owning process does
  kb::ScratchDir e = kb::makeScratchDir(parent_, "kbcheck-worker");
  EXPECT_FALSE(fs::exists(left));
  EXPECT_TRUE(fs::is_directory(e.path));
}

// The case this exists for: an owner killed (no destructor runs).
TEST_F(ScratchDirTest, KilledOwnersDirectoryIsReclaimed) {
  ForkedOwner owner = forkOwner([&](const auto& report) {
    kb::ScratchDir d = kb::makeScratchDir(parent_, "kbcheck-worker");
    report(d.path.string());
  });
  ASSERT_GE(owner.pid, 0);
  std::string path = owner.line;
  ASSERT_FALSE(path.empty());
  EXPECT_TRUE(kb::reclaimAbandonedScratchDirs(parent_, "kbcheck-worker").empty()) << "the owner still lives";
  EXPECT_TRUE(fs::is_directory(path));
  killOwner(owner.pid);
  auto removed = kb::reclaimAbandonedScratchDirs(parent_, "kbcheck-worker");
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], fs::path(path));
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(ScratchDirTest, KeptAndForeignDirectoriesStay) {
  // Kept for the user (--keep-workdir): no lock file, never reclaimed.
  kb::ScratchDir kept = kb::makeScratchDir(parent_, "kbcheck-worker");
  kb::keepScratchDir(kept.path);
  kept.owner.reset();
  // Another prefix, and an unlocked look-alike reached through a link: the
  // link's target is not ours to delete.
  kb::ScratchDir other = kb::makeScratchDir(parent_, "kb-reference");
  other.owner.reset();
  fs::path target = parent_ / "elsewhere";
  fs::create_directories(target);
  std::ofstream(target / "owner.lock") << "";
  std::ofstream(target / "precious") << "data";
  fs::create_directory_symlink(target, parent_ / "kbcheck-worker-link");
  // An older version's directory, without owner.lock.
  fs::create_directories(parent_ / "kbcheck-worker-old");

  EXPECT_TRUE(kb::reclaimAbandonedScratchDirs(parent_, "kbcheck-worker").empty());
  EXPECT_TRUE(fs::is_directory(kept.path));
  EXPECT_TRUE(fs::is_directory(other.path));
  EXPECT_TRUE(fs::exists(target / "precious"));
  EXPECT_TRUE(fs::is_directory(parent_ / "kbcheck-worker-old"));
  // The other prefix's own sweep takes its released directory.
  EXPECT_EQ(kb::reclaimAbandonedScratchDirs(parent_, "kb-reference").size(), 1u);
}

TEST_F(ScratchDirTest, ParentThatIsAFileIsAClearError) {
  fs::path file = parent_ / "not-a-dir";
  std::ofstream(file) << "x";
  try {
    kb::makeScratchDir(file, "kbcheck-worker");
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Not a directory"), std::string::npos) << e.what();
  }
}

}  // namespace
