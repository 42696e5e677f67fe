// kbprof's side of the timed-call protocol (profile/pacing.h): a worker's
// questions answered in turn, out of turn refused, and the channel kept in
// step (a seed is given only once the last call's commit has arrived).
#include "profile/pacing.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "core/json.h"
#include "verify/wire.h"

namespace kb::profile {
namespace {

namespace fs = std::filesystem;

class PacingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kb-pacing-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    channel_ = dir_ / "result.bin";
    fd_ = ::open(channel_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    ::close(fd_);
    fs::remove_all(dir_);
  }
  void commit(uint64_t call, uint64_t seed) {
    Json h{{"type", "commit"}, {"call", call}, {"seed", seed}, {"event_ms", 1.0}};
    ASSERT_TRUE(verify::writeRecord(fd_, h, std::string(100, 'x')));
  }
  static uint64_t seedOf(const std::string& answer) { return Json::parse(answer).at("seed").get<uint64_t>(); }

  fs::path dir_, channel_;
  int fd_ = -1;
};

TEST_F(PacingTest, AnHonestLoopIsAnsweredInTurn) {
  CallPacer p(channel_, {0, 1, 2}, 10, 2.0);
  EXPECT_EQ(p.answer("null begin 0"), "go");
  EXPECT_EQ(p.answer("null end 0"), "ok");
  for (uint64_t k = 0; k < 3; ++k) {
    std::string a = p.answer("seed " + std::to_string(k));
    ASSERT_EQ(a.rfind("refused", 0), std::string::npos) << a;
    uint64_t seed = seedOf(a);
    EXPECT_GT(seed, 2u);  // never a correctness seed
    EXPECT_EQ(p.answer("begin " + std::to_string(k)), "go");
    EXPECT_EQ(p.answer("end " + std::to_string(k)), "ok");
    commit(k, seed);
  }
  EXPECT_EQ(p.answer("done 3"), "ok");
  EXPECT_TRUE(p.done());
  EXPECT_TRUE(p.violation().empty());
  EXPECT_EQ(p.commits().size(), 3u);
  EXPECT_EQ(p.nullWindowsMs().size(), 1u);
  for (const auto& c : p.calls()) EXPECT_GE(c.windowMs(), 0.0);
}

TEST_F(PacingTest, ASeedBeforeTheLastCommitIsRefused) {
  CallPacer p(channel_, {}, 10, 0.2);
  uint64_t seed = seedOf(p.answer("seed 0"));
  (void)seed;
  p.answer("begin 0");
  p.answer("end 0");
  // No commit of call 0 on the channel: the next seed is not given.
  EXPECT_EQ(p.answer("seed 1").rfind("refused", 0), 0u);
  EXPECT_NE(p.violation().find("commit did not reach"), std::string::npos);
}

TEST_F(PacingTest, QuestionsOutOfTurnAreViolations) {
  {
    CallPacer p(channel_, {}, 10, 0.2);
    p.answer("seed 0");
    p.answer("begin 0");
    // The candidate's code asks for a seed ahead, inside call 0.
    EXPECT_EQ(p.answer("seed 1").rfind("refused", 0), 0u);
    EXPECT_FALSE(p.violation().empty());
    // Everything after a violation is refused.
    EXPECT_EQ(p.answer("end 0").rfind("refused", 0), 0u);
  }
  {
    CallPacer p(channel_, {}, 10, 0.2);
    EXPECT_EQ(p.answer("select 2").rfind("refused", 0), 0u);
  }
  {
    CallPacer p(channel_, {}, 1, 0.2);
    uint64_t seed = seedOf(p.answer("seed 0"));
    p.answer("begin 0");
    p.answer("end 0");
    commit(0, seed);
    // More calls than the channel was sized for.
    EXPECT_EQ(p.answer("seed 1").rfind("refused", 0), 0u);
  }
}

TEST_F(PacingTest, ACommitTheHarnessDidNotWriteIsAViolation) {
  CallPacer p(channel_, {}, 10, 0.2);
  uint64_t seed = seedOf(p.answer("seed 0"));
  p.answer("begin 0");
  p.answer("end 0");
  commit(0, seed + 1);  // another seed than the call had
  EXPECT_EQ(p.answer("seed 1").rfind("refused", 0), 0u);
  EXPECT_NE(p.violation().find("not the one the parent expected"), std::string::npos);
}

}  // namespace
}  // namespace kb::profile
