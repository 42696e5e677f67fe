#include "verify/wire.h"

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
  kb::verify::WireTensor t;
  t.dtype = KB_FLOAT32;
  t.sizes = {2, 3};
  std::string bytes(24, 'x');
  t.bytes = bytes;
  kb::Json h;
  h["type"] = "seed";
  h["outputs"] = kb::Json::array({kb::verify::tensorHeader(t)});
  ASSERT_TRUE(kb::verify::writeRecord(fd, h, t.bytes));
  kb::Json done;
  done["type"] = "done";
  ASSERT_TRUE(kb::verify::writeRecord(fd, done, ""));
  ::close(fd);
  std::string problem;
  auto recs = kb::verify::readRecords(p, &problem);
  EXPECT_TRUE(problem.empty()) << problem;
  ASSERT_EQ(recs.size(), 2u);
  std::size_t off = 0;
  auto ts = kb::verify::takeTensors(recs[0].header["outputs"], recs[0].payload, &off);
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ts[0].bytes, t.bytes);
  fs::remove(p);
}

TEST(Wire, PartsAreConcatenatedAndPayloadsAligned) {
  fs::path p = tmpFile("parts");
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  uint64_t written = 0;
  std::string a(10, 'a'), b(7, 'b');
  kb::Json h;
  h["type"] = "seed";
  ASSERT_TRUE(kb::verify::writeRecord(fd, h, {a, b}, &written));
  ASSERT_TRUE(kb::verify::writeRecord(fd, h, {b}, &written));
  kb::Json done;
  done["type"] = "done";
  ASSERT_TRUE(kb::verify::writeRecord(fd, done, {}, &written));
  ::close(fd);
  EXPECT_EQ(written, fs::file_size(p));
  std::string problem;
  auto recs = kb::verify::readRecords(p, &problem);
  ASSERT_TRUE(problem.empty()) << problem;
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].payload, a + b);
  EXPECT_EQ(recs[1].payload, b);
  // Each payload starts on a 64-byte boundary of the file (the mapping is
  // page-aligned), so tensors are used where they lie.
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(recs[i].payload.data()) % 64, 0u) << i;
  // Headers only: no payloads, same headers.
  auto heads = kb::verify::readRecords(p, &problem, /*headers_only=*/true);
  ASSERT_EQ(heads.size(), 3u);
  EXPECT_TRUE(heads[0].payload.empty());
  EXPECT_EQ(heads[2].header["type"], "done");
  fs::remove(p);
}

// A payload made while it is written (a device tensor through the staging
// buffer) gives the same bytes on the channel as writeRecord; a producer
// that stops short, or gives more than it said, fails the write.
TEST(Wire, StreamedRecordsAreTheSameBytes) {
  fs::path whole = tmpFile("whole"), streamed = tmpFile("streamed");
  std::string a(100, 'a'), b(37, 'b');
  kb::Json h;
  h["type"] = "commit";
  int fd = ::open(whole.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  uint64_t w1 = 0;
  ASSERT_TRUE(kb::verify::writeRecord(fd, h, {b}, &w1));
  ASSERT_TRUE(kb::verify::writeRecord(fd, h, {a, b}, &w1));
  ::close(fd);
  fd = ::open(streamed.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  uint64_t w2 = 0;
  ASSERT_TRUE(kb::verify::writeRecord(fd, h, {b}, &w2));
  std::string all = a + b;
  std::size_t at = 0;
  auto next = [&]() -> std::string_view {  // pieces of 30 bytes, as a small staging buffer gives them
    std::string_view piece = std::string_view(all).substr(at, 30);
    at += piece.size();
    return piece;
  };
  ASSERT_TRUE(kb::verify::writeRecordStreamed(fd, h, all.size(), next, &w2));
  EXPECT_EQ(w1, w2);
  at = 0;
  EXPECT_FALSE(kb::verify::writeRecordStreamed(fd, h, all.size() + 1, next, &w2));  // stops short
  at = 0;
  EXPECT_FALSE(kb::verify::writeRecordStreamed(fd, h, 10, next, &w2));  // a piece beyond the total
  ::close(fd);
  std::ifstream x(whole, std::ios::binary), y(streamed, std::ios::binary);
  std::string xs((std::istreambuf_iterator<char>(x)), {}), ys((std::istreambuf_iterator<char>(y)), {});
  ASSERT_GE(ys.size(), xs.size());
  EXPECT_EQ(ys.substr(0, xs.size()), xs);
  std::string problem;
  auto recs = kb::verify::readRecords(whole, &problem);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].payload, all);
  fs::remove(whole);
  fs::remove(streamed);
}

TEST(Wire, GarbageAndLiesAreRejected) {
  fs::path p = tmpFile("bad");
  std::ofstream(p) << "KBW1\xff\xff\xff\x7fnot json";
  std::string problem;
  auto recs = kb::verify::readRecords(p, &problem);
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
  EXPECT_THROW(kb::verify::takeTensors(lie, "", &off), kb::Error);
  lie[0]["sizes"] = {2};
  lie[0]["nbytes"] = 8;
  EXPECT_THROW(kb::verify::takeTensors(lie, "1234", &off), kb::Error);  // payload too short
  lie[0]["nbytes"] = 7;
  EXPECT_THROW(kb::verify::takeTensors(lie, "12345678", &off), kb::Error);
}

}  // namespace

// A well-framed record the harness never writes, or one whose fields are of
// the wrong kind, ends the channel: what the parent reads later never throws.
TEST(Wire, HeadersAreCheckedByTheirFieldsKinds) {
  using kb::Json;
  using kb::verify::recordProblem;
  EXPECT_EQ(recordProblem({{"type", "seed"}, {"seed", 3}, {"ok", true}, {"forward_seconds", 0.1}}), "");
  EXPECT_EQ(recordProblem({{"type", "timing"}, {"event_median_ms", nullptr}}), "");
  EXPECT_EQ(recordProblem({{"type", "activities"}, {"call", -1},
                           {"activities", Json::array({Json::array({"kernel", "k", 7, 1, 2, 0, -1, 3})})}}),
            "");
  EXPECT_NE(recordProblem({{"type", "note"}, {"ok", false}}), "");
  EXPECT_NE(recordProblem({{"type", "seed"}, {"seed", "zz"}}), "");
  EXPECT_NE(recordProblem({{"type", "seed"}, {"seed", -1}}), "");
  EXPECT_NE(recordProblem({{"type", "commit"}, {"call", 1.5}}), "");
  EXPECT_NE(recordProblem({{"type", "seed"}, {"ok", "yes"}}), "");
  EXPECT_NE(recordProblem({{"type", "init"}, {"message", 7}}), "");
  EXPECT_NE(recordProblem({{"type", "hello"}, {"startup_seconds", "1"}}), "");
  EXPECT_NE(recordProblem({{"type", "init"}, {"state_digests", Json::array()}}), "");
  EXPECT_NE(recordProblem({{"type", "activities"}, {"activities", Json::array({Json::array({"kernel", 1})})}}), "");
  EXPECT_NE(recordProblem({{"type", 3}}), "");
  EXPECT_NE(recordProblem(Json::array()), "");
}
