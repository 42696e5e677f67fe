#include "harness/wire.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"
#include "kb/solution.h"

namespace fs = std::filesystem;

namespace {

fs::path tmpFile(const std::string& name) {
  return fs::temp_directory_path() / ("kb_wire_test_" + std::to_string(::getpid()) + "_" + name);
}

TEST(Wire, RoundTrip) {
  fs::path p = tmpFile("rt");
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  kb::WireTensor t;
  t.dtype = KB_FLOAT32;
  t.sizes = {2, 3};
  t.bytes = std::string(24, 'x');
  kb::Json h;
  h["type"] = "seed";
  h["outputs"] = kb::Json::array({kb::tensorHeader(t)});
  ASSERT_TRUE(kb::writeRecord(fd, h, t.bytes));
  kb::Json done;
  done["type"] = "done";
  ASSERT_TRUE(kb::writeRecord(fd, done, ""));
  ::close(fd);
  std::string problem;
  auto recs = kb::readRecords(p, &problem);
  EXPECT_TRUE(problem.empty()) << problem;
  ASSERT_EQ(recs.size(), 2u);
  std::size_t off = 0;
  auto ts = kb::takeTensors(recs[0].header["outputs"], recs[0].payload, &off);
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ts[0].bytes, t.bytes);
  fs::remove(p);
}

TEST(Wire, GarbageAndLiesAreRejected) {
  fs::path p = tmpFile("bad");
  std::ofstream(p) << "KBW1\xff\xff\xff\x7fnot json";
  std::string problem;
  auto recs = kb::readRecords(p, &problem);
  EXPECT_TRUE(recs.empty());
  EXPECT_FALSE(problem.empty());
  fs::remove(p);

  // A shape that overflows, or bytes that do not match the shape.
  kb::Json lie = kb::Json::array();
  kb::Json d;
  d["dtype"] = KB_FLOAT32;
  d["sizes"] = {int64_t{1} << 62, 8};
  d["nbytes"] = 0;
  lie.push_back(d);
  std::size_t off = 0;
  EXPECT_THROW(kb::takeTensors(lie, "", &off), kb::Error);
  lie[0]["sizes"] = {2};
  lie[0]["nbytes"] = 8;
  EXPECT_THROW(kb::takeTensors(lie, "1234", &off), kb::Error);  // payload too short
  lie[0]["nbytes"] = 7;
  EXPECT_THROW(kb::takeTensors(lie, "12345678", &off), kb::Error);
}

}  // namespace
