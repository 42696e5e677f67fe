// core/file.h: AtomicFile and writeFileAtomic (issue 38: nothing
// half-written under the output's name, no temporary left, a device or FIFO
// target written in place, never replaced by a file).
#include "core/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;

namespace {

fs::path freshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kb-file-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::size_t entries(const fs::path& d) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

}  // namespace

TEST(AtomicFile, CommitReplacesAndLeavesNoTemporary) {
  fs::path d = freshDir("commit");
  kb::writeFileAtomic(d / "out.json", "old\n");
  {
    kb::AtomicFile f(d / "out.json");
    f.write("new ");
    f.write(std::string("content\n"));
    f.commit();
  }
  EXPECT_EQ(kb::readFile(d / "out.json"), "new content\n");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicFile, WithoutCommitTheOldFileStaysAndTheTemporaryGoes) {
  fs::path d = freshDir("abandon");
  kb::writeFileAtomic(d / "model.safetensors", "old");
  try {
    kb::AtomicFile f(d / "model.safetensors");
    f.write("half of a new");
    throw std::runtime_error("a write failed half way");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(kb::readFile(d / "model.safetensors"), "old");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicFile, UnwritableDirectoryNamesTheReason) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  fs::path d = freshDir("ro");
  fs::permissions(d, fs::perms::owner_read | fs::perms::owner_exec);
  try {
    kb::writeFileAtomic(d / "x", "y");
    FAIL() << "wrote into a read-only directory";
  } catch (const kb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("EACCES"), std::string::npos) << e.what();
  }
  fs::permissions(d, fs::perms::owner_all);
  fs::remove_all(d);
}

// `-o /dev/null` as root replaced the machine's /dev/null with a file (seen
// during this work): a target that is not a regular file is written
// in place. A FIFO stands in for the device here.
TEST(AtomicFile, ANonRegularTargetIsWrittenInPlace) {
  fs::path d = freshDir("fifo");
  fs::path fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo);
    std::getline(in, got);
  });
  kb::writeFileAtomic(fifo, "through the pipe\n");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(ErrnoText, NamesTheErrno) {
  EXPECT_NE(kb::errnoText(ENOSPC).find("(ENOSPC)"), std::string::npos);
  EXPECT_NE(kb::errnoText(ENOSPC).find("No space left on device"), std::string::npos);
}

TEST(OutOfSpace, ARoomyDiskIsNotFull) {
  EXPECT_FALSE(kb::outOfSpace(fs::temp_directory_path(), 1));
  auto full = kb::outOfSpace(fs::temp_directory_path() / "not" / "yet" / "made", ~0ull);
  ASSERT_TRUE(full);  // the nearest existing parent is asked
  EXPECT_NE(full->find("ENOSPC"), std::string::npos);
}
