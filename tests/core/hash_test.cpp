#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/hash.h"

#include <gtest/gtest.h>

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(kb::sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(kb::sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  kb::Sha256 h;
  h.update("a");
  h.update("bc");
  EXPECT_EQ(h.hexDigest(), kb::sha256Hex("abc"));
}

// A large file's hash is memoised by its identity (device, inode, size,
// mtime, ctime): an edit that keeps size and mtime is still seen (ctime).
TEST(FileSha256, MemoNeverHidesAnEdit) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kb_file_sha_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  ::setenv("KB_CACHE_DIR", (dir / "cache").c_str(), 1);
  std::string content(17 << 20, 'a');
  fs::path f = dir / "weights.bin";
  std::ofstream(f, std::ios::binary) << content;
  const std::string want = "sha256:" + kb::sha256Hex(content);
  EXPECT_EQ(kb::fileSha256(f.string()), want);
  EXPECT_FALSE(fs::exists(dir / "cache" / "file-sha256"));  // changed just now: no memo yet
  ::sleep(3);
  EXPECT_EQ(kb::fileSha256(f.string()), want);
  ASSERT_TRUE(fs::exists(dir / "cache" / "file-sha256"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "cache" / "file-sha256"), fs::directory_iterator()), 1);
  EXPECT_EQ(kb::fileSha256(f.string()), want);  // from the memo

  // Same size, mtime set back: only ctime tells.
  struct stat before {};
  ASSERT_EQ(::stat(f.c_str(), &before), 0);
  content[12345] = 'b';
  {
    std::fstream io(f, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(12345);
    io.put('b');
  }
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
  EXPECT_EQ(kb::fileSha256(f.string()), "sha256:" + kb::sha256Hex(content));

  // Small files are always read; a missing file is an error.
  std::ofstream(dir / "small.txt") << "x";
  EXPECT_EQ(kb::fileSha256((dir / "small.txt").string()), "sha256:" + kb::sha256Hex("x"));
  EXPECT_THROW(kb::fileSha256((dir / "missing").string()), kb::Error);
  ::unsetenv("KB_CACHE_DIR");
  fs::remove_all(dir);
}
