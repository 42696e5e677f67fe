// lib/eval on the CPU: which stages run, the stop at the first failing
// stage, the report header, and the typed timings and speed-ups of a
// host-clock profile (kbprof --device cpu's path).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/speedup.h"
#include "eval/eval.h"
#include "cpu_request.h"

namespace fs = std::filesystem;

namespace {

fs::path sourceRoot() { return std::getenv("KB_SOURCE_ROOT"); }
fs::path task() { return sourceRoot() / "testdata/tasks/linear_relu"; }

// A request on the CPU with a private build cache and scratch, short limits.
class Eval : public ::testing::Test {
 protected:
  fs::path scratch = fs::temp_directory_path() / ("kb_eval_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(scratch); }
  void TearDown() override { fs::remove_all(scratch); }

  kb::eval::Request request(const fs::path& solution, kb::eval::Stages stages) {
    return cpuRequest(task(), solution, stages, scratch);
  }
};

TEST_F(Eval, BuildOnlyRunsNoOtherStage) {
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu", {});
  q.task_dir.clear();  // kbcheck build: no task
  kb::eval::Result r = kb::eval::evaluate(q);
  EXPECT_EQ(r.status(), kb::Status::Ok) << r.message;
  ASSERT_EQ(r.stages.size(), 4u);
  EXPECT_EQ(r.stages[0].name, "static");
  EXPECT_TRUE(r.stage("static").skipped);
  EXPECT_FALSE(r.stage("build").skipped);
  EXPECT_TRUE(r.stage("verify").skipped);
  EXPECT_TRUE(r.stage("profile").skipped);
  ASSERT_TRUE(r.build);
  EXPECT_TRUE(fs::exists(r.build->library));
  EXPECT_FALSE(r.verify || r.profile || r.static_check);
  // The header: the tool asked for, the solution's hash, no task.
  EXPECT_EQ(r.header.tool, "kbcheck");
  EXPECT_EQ(r.header.solution_hash.rfind("sha256:", 0), 0u);
  EXPECT_EQ(r.header.solution_hash, r.build->solution_hash);
  EXPECT_TRUE(r.header.task_id.empty());
  EXPECT_FALSE(r.header.started_at.empty());
  EXPECT_FALSE(r.header.finished_at.empty());
  EXPECT_EQ(r.message, "");
  kb::Json j = kb::eval::checkReportJson(r, "build");
  EXPECT_EQ(j["stage"], "build");
  EXPECT_TRUE(j["task_id"].is_null());
  EXPECT_EQ(j["stages"].size(), 3u);  // kbcheck's: static, build, verify
  EXPECT_TRUE(j["stages"]["verify"]["skipped"].get<bool>());
}

TEST_F(Eval, StaticBuildVerifyOk) {
  kb::eval::StaticChecker checker;
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu",
                                {.static_check = true, .build = true, .verify = true});
  q.static_checker = &checker;
  kb::eval::Result r = kb::eval::evaluate(q);
  EXPECT_EQ(r.status(), kb::Status::Ok) << r.message;
  EXPECT_EQ(r.header.task_id, "testdata/linear_relu");
  EXPECT_EQ(r.stage("static").skipped, !kb::eval::StaticChecker::available());
  if (kb::eval::StaticChecker::available()) {
    ASSERT_TRUE(r.static_check);
    EXPECT_EQ(r.static_check->status, kb::Status::Ok);
    EXPECT_EQ(r.stage("static").detail["tool"], "kbcheck");
  }
  ASSERT_TRUE(r.verify);
  EXPECT_EQ(r.verify->status, kb::Status::Ok);
  EXPECT_FALSE(r.stage("verify").skipped);
  EXPECT_TRUE(r.stage("profile").skipped);  // not asked
  EXPECT_EQ(kb::eval::checkReportJson(r, "")["status"], "ok");
}

TEST_F(Eval, StopsAtTheFirstFailingStage) {
  // verify fails: profile, though asked, does not run.
  kb::eval::Result r = kb::eval::evaluate(request(sourceRoot() / "testdata/solutions-cpu/wrong_result",
                                                  {.build = true, .verify = true, .profile = true}));
  EXPECT_EQ(r.status(), kb::Status::Incorrect);
  EXPECT_EQ(r.message.rfind("verify: ", 0), 0u) << r.message;
  EXPECT_EQ(r.message.find('\n'), std::string::npos);
  EXPECT_EQ(r.stage("verify").status, kb::Status::Incorrect);
  EXPECT_TRUE(r.stage("profile").skipped);
  EXPECT_FALSE(r.profile);

  // the build fails: nothing after it runs, and kbprof's report is the
  // build-failure report.
  fs::path broken = scratch / "broken";
  fs::create_directories(broken);
  std::ofstream(broken / "forward.cpp") << "this is not C++\n";
  kb::eval::Result b = kb::eval::evaluate(request(broken, {.build = true, .verify = true, .profile = true}));
  EXPECT_EQ(b.status(), kb::Status::CompileError);
  EXPECT_EQ(b.message.rfind("build: ", 0), 0u) << b.message;
  EXPECT_TRUE(b.stage("verify").skipped);
  EXPECT_TRUE(b.stage("profile").skipped);
  kb::eval::Result p = kb::eval::evaluate(request(broken, {.build = true, .profile = true}));
  EXPECT_EQ(p.status(), kb::Status::CompileError);
  EXPECT_FALSE(p.profile);
  kb::Json j = kb::eval::profileReportJson(p);
  EXPECT_EQ(j["tool"], "kbprof");
  EXPECT_EQ(j["stage"], "build");
  EXPECT_EQ(j["status"], "compile_error");
  EXPECT_EQ(j["timing_method"], "host_clock");
  EXPECT_TRUE(j["timings"].empty());
}

TEST_F(Eval, ProfileOnTheCpuGivesTypedTimingsAndOneSpeedup) {
  kb::eval::Request q = request(sourceRoot() / "testdata/solutions-cpu-timed/ok_host_object",
                                {.build = true, .profile = true});
  q.tool = "kbprof";
  kb::eval::Result r = kb::eval::evaluate(q);
  ASSERT_TRUE(r.profile);
  ASSERT_EQ(r.status(), kb::Status::Ok) << r.message;
  EXPECT_EQ(r.header.tool, "kbprof");
  EXPECT_EQ(r.header.task_id, "testdata/linear_relu");
  EXPECT_EQ(r.header.solution_hash, r.profile->solution_hash);
  EXPECT_FALSE(r.stage("build").skipped);
  EXPECT_FALSE(r.stage("profile").skipped);
  const kb::profile::ProfileResult& p = *r.profile;
  EXPECT_EQ(p.timing_method, "host_clock");
  ASSERT_TRUE(p.candidate.present());
  ASSERT_TRUE(p.eager.present());
  // The speed-up is kb::speedup of the medians, and nothing else.
  ASSERT_TRUE(p.speedup_vs_eager);
  EXPECT_DOUBLE_EQ(*p.speedup_vs_eager, *kb::speedup(p.eager.event.median, p.candidate.event.median));
  EXPECT_FALSE(p.speedup_vs_compile);  // no torch.compile on the CPU
  // The typed timings lib/reward scores.
  kb::reward::Timings t = kb::eval::rewardTimings(p);
  ASSERT_TRUE(t.candidate && t.eager && t.compile);
  EXPECT_EQ(t.candidate->median_ms, p.candidate.event.median);
  EXPECT_EQ(t.candidate->ci95_high_ms, p.candidate.event.ci_high);
  EXPECT_EQ(t.eager->median_ms, p.eager.event.median);
  EXPECT_TRUE(std::isnan(t.compile->median_ms));  // not timed: all NaN
  // kbprof's report: the field names docs/kbprof.md promises.
  kb::Json j = kb::eval::profileReportJson(r);
  EXPECT_EQ(j["stage"], "profile");
  EXPECT_EQ(j["speedup_vs_eager"].get<double>(), *p.speedup_vs_eager);
  EXPECT_TRUE(j["speedup_vs_compile"].is_null());
  EXPECT_EQ(j["build"]["status"], "ok");
}

TEST_F(Eval, BatchVerifiesTheBuiltSolutionsTogether) {
  // Three solutions of one task: right, wrong, not C++. One Result each, in
  // order, as evaluate() gives them; the two that build verified in one go.
  fs::path broken = scratch / "broken";
  fs::create_directories(broken);
  std::ofstream(broken / "forward.cpp") << "this is not C++\n";
  std::vector<kb::solution::Solution> solutions = {kb::solution::loadSolution(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu"),
                                         kb::solution::loadSolution(sourceRoot() / "testdata/solutions-cpu/wrong_result"),
                                         kb::solution::loadSolution(broken)};
  kb::eval::Request q = request("", {.build = true, .verify = true});
  q.stage_errors_as_infra = true;
  std::vector<kb::eval::Result> r = kb::eval::evaluateBatch(q, solutions);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].status(), kb::Status::Ok) << r[0].message;
  EXPECT_EQ(r[0].header.task_id, "testdata/linear_relu");
  EXPECT_EQ(r[0].header.solution_hash, solutions[0].hash);
  EXPECT_FALSE(r[0].stage("verify").skipped);
  ASSERT_TRUE(r[0].verify);
  EXPECT_EQ(r[1].status(), kb::Status::Incorrect);
  EXPECT_EQ(r[1].message.rfind("verify: ", 0), 0u) << r[1].message;
  EXPECT_EQ(r[1].stage("verify").status, kb::Status::Incorrect);
  EXPECT_EQ(r[2].status(), kb::Status::CompileError);
  EXPECT_EQ(r[2].message.rfind("build: ", 0), 0u) << r[2].message;
  EXPECT_TRUE(r[2].stage("verify").skipped);
  EXPECT_FALSE(r[2].verify);
  // The same verdicts one at a time.
  for (size_t k = 0; k < 2; ++k) {
    kb::eval::Request one = request("", {.build = true, .verify = true});
    one.solution = &solutions[k];
    EXPECT_EQ(kb::eval::evaluate(one).status(), r[k].status()) << k;
  }
  // A batch is built and verified; profile is not offered.
  EXPECT_THROW(kb::eval::evaluateBatch(request("", {.build = true, .verify = true, .profile = true}), solutions),
               kb::UsageError);
  EXPECT_THROW(kb::eval::evaluateBatch(request("", {.build = true}), solutions), kb::UsageError);
}

TEST(RewardJson, DegenerateTaskGetsNoRewardUnderItsContract) {
  kb::reward::Scheme scheme;
  scheme.kind = kb::reward::SchemeKind::Correctness;
  kb::Json task = {{"degenerate", {{"reason", "zeros_pass"}, {"contracts", {"paper"}}}}};
  // Judged under the contract it is trivial under: excluded, whatever the status.
  for (kb::Status s : {kb::Status::Ok, kb::Status::Incorrect}) {
    kb::Json r = kb::eval::rewardJson("t", "sha256:x", s, std::nullopt, true, scheme, task, "paper");
    EXPECT_TRUE(r["value"].is_null()) << r.dump();
    EXPECT_EQ(r["excluded"], "degenerate_task") << r.dump();
    EXPECT_EQ(r["degenerate_task"]["reason"], "zeros_pass");
  }
  // The contract unknown: excluded (a trivial solution may have passed).
  EXPECT_EQ(kb::eval::rewardJson("t", "h", kb::Status::Ok, std::nullopt, true, scheme, task, "")["excluded"],
            "degenerate_task");
  // Under strict the task is fair: scored, with the flag carried along.
  kb::Json strict = kb::eval::rewardJson("t", "h", kb::Status::Ok, std::nullopt, true, scheme, task, "strict");
  EXPECT_FALSE(strict["value"].is_null()) << strict.dump();
  EXPECT_EQ(strict["degenerate_task"]["contracts"][0], "paper");
  // infra_error stays the machine's, and no flag means no change.
  EXPECT_NE(kb::eval::rewardJson("t", "h", kb::Status::InfraError, std::nullopt, true, scheme, task, "paper")["excluded"],
            "degenerate_task");
  kb::Json plain = kb::eval::rewardJson("t", "h", kb::Status::Ok, std::nullopt, true, scheme);
  EXPECT_FALSE(plain.contains("degenerate_task"));
  EXPECT_FALSE(plain["value"].is_null());
}

TEST(Speedup, OneRatio) {
  EXPECT_DOUBLE_EQ(*kb::speedup(2.0, 1.0), 2.0);
  EXPECT_FALSE(kb::speedup(0.0, 1.0));
  EXPECT_FALSE(kb::speedup(1.0, 0.0));
  EXPECT_FALSE(kb::speedup(std::nan(""), 1.0));
}

}  // namespace
