// eval::Session on the CPU: a solution read and built once, its verdicts
// kept between calls, a kept failure answered at once, an infrastructure
// failure run again, and one result over calls made under different leases.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "cpu_request.h"
#include "eval/session.h"

namespace fs = std::filesystem;

namespace {

fs::path sourceRoot() { return std::getenv("KB_SOURCE_ROOT"); }

class EvalSession : public ::testing::Test {
 protected:
  fs::path scratch = fs::temp_directory_path() / ("kb_session_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(scratch); }
  void TearDown() override { fs::remove_all(scratch); }

  kb::eval::Request request(const fs::path& solution) {
    kb::eval::Request q = cpuRequest(sourceRoot() / "testdata/tasks/linear_relu", solution,
                                     {.build = true, .verify = true}, scratch);
    q.stage_errors_as_infra = true;
    return q;
  }
};

}  // namespace

TEST_F(EvalSession, KeepsTheBuildAndTheVerdictBetweenCalls) {
  kb::eval::Session s(request(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu"));
  const kb::eval::Result& built = s.run({.build = true});
  ASSERT_EQ(built.status(), kb::Status::Ok) << built.message;
  EXPECT_TRUE(built.stage("verify").skipped);
  EXPECT_TRUE(s.kept("build"));
  EXPECT_FALSE(s.kept("verify"));
  const std::string key = s.result().build->key;
  const double build_seconds = s.result().stage("build").seconds;

  // verify asked later: the build is the session's, not run again.
  const kb::eval::Result& verified = s.run({.build = true, .verify = true});
  ASSERT_EQ(verified.status(), kb::Status::Ok) << verified.message;
  EXPECT_EQ(verified.stage("build").seconds, build_seconds);
  EXPECT_EQ(verified.build->key, key);
  EXPECT_FALSE(verified.stage("verify").skipped);
  EXPECT_EQ(verified.header.task_id, "testdata/linear_relu");
  EXPECT_TRUE(s.kept("verify"));

  // Asked again: the verdict is kept, no worker starts.
  const double verify_seconds = s.result().stage("verify").seconds;
  const double worker_seconds = s.result().verify->seconds;
  s.run({.build = true, .verify = true});
  EXPECT_EQ(s.result().stage("verify").seconds, verify_seconds);
  EXPECT_EQ(s.result().verify->seconds, worker_seconds);
  EXPECT_EQ(kb::eval::checkReportJson(s.result(), "")["status"], "ok");
}

TEST_F(EvalSession, AKeptFailureAnswersAtOnce) {
  kb::eval::Session s(request(sourceRoot() / "testdata/solutions-cpu/wrong_result"));
  s.run();
  ASSERT_EQ(s.result().status(), kb::Status::Incorrect) << s.result().message;
  EXPECT_TRUE(s.failed());
  EXPECT_TRUE(s.kept("profile"));  // nothing after the failure will run
  const std::string finished = s.result().header.finished_at;
  s.run({.build = true, .verify = true, .profile = true});
  EXPECT_EQ(s.result().status(), kb::Status::Incorrect);
  EXPECT_EQ(s.result().message.rfind("verify: ", 0), 0u) << s.result().message;
  EXPECT_TRUE(s.result().stage("profile").skipped);
  EXPECT_EQ(s.result().header.finished_at, finished);
}

TEST_F(EvalSession, AnInfrastructureFailureIsRunAgain) {
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu");
  q.verify.worker = scratch / "no-such-worker";
  kb::eval::Session s(q);
  s.run();
  ASSERT_EQ(s.result().status(), kb::Status::InfraError) << s.result().message;
  EXPECT_EQ(s.result().message.rfind("verify: ", 0), 0u) << s.result().message;
  EXPECT_FALSE(s.failed());
  EXPECT_FALSE(s.kept("verify"));
  EXPECT_TRUE(s.kept("build"));
  s.request().verify.worker.clear();  // the machine is fixed: the next call verifies
  s.run();
  EXPECT_EQ(s.result().status(), kb::Status::Ok) << s.result().message;
  EXPECT_EQ(s.result().message, "");
  EXPECT_TRUE(s.kept("verify"));
}

TEST_F(EvalSession, ProfilesAfterItsOwnVerdict) {
  // Static and build first, then verify and profile: one result, as kbserve
  // reports it after its CPU slot and its device lease.
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu-timed/ok_host_object");
  q.tool = "kbserve";
  kb::eval::Session s(q);
  s.run({.build = true});
  ASSERT_EQ(s.result().status(), kb::Status::Ok) << s.result().message;
  s.run({.build = true, .verify = true, .profile = true});
  ASSERT_EQ(s.result().status(), kb::Status::Ok) << s.result().message;
  ASSERT_TRUE(s.result().verify && s.result().profile && s.result().build);
  EXPECT_FALSE(s.result().stage("build").skipped);
  EXPECT_FALSE(s.result().stage("verify").skipped);
  EXPECT_FALSE(s.result().stage("profile").skipped);
  EXPECT_TRUE(s.result().profile->candidate.present());
  EXPECT_EQ(s.result().header.tool, "kbserve");
}

TEST_F(EvalSession, HeldProfileWorkersWaitForTheirDevice) {
  // kbserve's order: the profile's workers start before the build, held
  // before any device call; the device is named when the profile runs
  // (after kbserve's GPU lease), and until then they wait.
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu-timed/ok_host_object");
  q.stages = {.build = true, .profile = true};
  q.tool = "kbserve";
  kb::eval::Session s(q);
  ASSERT_TRUE(s.startProfileWorkers());
  EXPECT_FALSE(s.startProfileWorkers());  // once
  s.run({.build = true});
  ASSERT_EQ(s.result().status(), kb::Status::Ok) << s.result().message;
  ::sleep(2);  // the wait for a lease
  s.request().profile.device = "cpu";
  s.run();
  ASSERT_EQ(s.result().status(), kb::Status::Ok) << s.result().message;
  ASSERT_TRUE(s.result().profile);
  EXPECT_TRUE(s.result().profile->candidate.present());
  EXPECT_EQ(s.result().profile->device, "cpu");
  // It was started before the build and waited through much of the sleep
  // (less its own start, which overlaps it; a worker started by the profile
  // waits for nothing).
  EXPECT_GE(s.result().profile->worker.hello.value("waited_seconds", 0.0), 0.5)
      << s.result().profile->worker.hello.dump();
}

TEST_F(EvalSession, HeldProfileWorkersLeaveWhenTheBuildFails) {
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu");
  q.stages = {.build = true, .profile = true};
  fs::path broken = scratch / "broken";
  fs::create_directories(broken);
  fs::copy(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu", broken, fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(broken))
    if (e.path().extension() == ".cpp") std::ofstream(e.path(), std::ios::app) << "\nthis does not compile;\n";
  q.solution_dir = broken;
  kb::eval::Session s(q);
  ASSERT_TRUE(s.startProfileWorkers());
  s.run({.build = true});
  EXPECT_EQ(s.result().status(), kb::Status::CompileError) << s.result().message;
  EXPECT_FALSE(s.startProfileWorkers());  // a kept failure: nothing more starts
  s.run();
  EXPECT_TRUE(s.result().stage("profile").skipped);
}

TEST_F(EvalSession, NoHeldProfileWorkersBeforeAVerifyStillToRun) {
  kb::eval::Session s(request(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu"));
  EXPECT_FALSE(s.startProfileWorkers());  // verify's workers come first
}

// A profile that is the evaluation's verification (kbserve
// --verify-in-profile) gives its candidate verify's limit until the timed
// loop: one that never returns from a correctness seed is stopped at that
// limit, not the profile's; an honest one still gets the profile's limit for
// its timed loop.
TEST_F(EvalSession, AFoldedProfileStopsAHangingSeedAtVerifysLimit) {
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu/infinite_loop");
  q.stages = {.build = true, .profile = true};
  q.profile.limits.wall_seconds = 120;
  q.profile.limits.cpu_seconds = 120;
  q.profile.untimed_wall_seconds = 3;
  kb::eval::Session s(q);
  auto t0 = std::chrono::steady_clock::now();
  s.run();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.result().status(), kb::Status::Timeout) << s.result().message;
  EXPECT_LT(took, 60.0) << "the hanging seed ran to the profile's limit";
  EXPECT_NE(s.result().message.find("correctness seeds"), std::string::npos) << s.result().message;

  q = request(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu");
  q.stages = {.build = true, .profile = true};
  q.profile.untimed_wall_seconds = 10;
  kb::eval::Session ok(q);
  ok.run();
  EXPECT_EQ(ok.result().status(), kb::Status::Ok) << ok.result().message;
}
