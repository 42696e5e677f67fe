// Every solution in testdata/solutions-cpu, built and verified one after the
// other in this one process: each must end with the status expected.json
// gives it, and the harness must still be standing at the end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "build/build.h"
#include "core/error.h"
#include "core/json.h"
#include "solution/solution.h"
#include "task/bundle.h"
#include "verify/verify.h"

namespace fs = std::filesystem;

namespace {

fs::path sourceRoot() { return std::getenv("KB_SOURCE_ROOT"); }

// Every worker's and reference worker's directory under `scratch` is gone
// (only the build cache stays); then `scratch` itself is removed.
void expectOnlyTheCacheLeft(const fs::path& scratch) {
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(scratch))
    if (e.path().filename() != "cache") ++leftovers;
  EXPECT_EQ(leftovers, 0);
  fs::remove_all(scratch);
}

// What both batch tests share: a scratch directory, the expected statuses,
// CPU build options with a private cache and verify options with short limits.
struct CpuBatch {
  fs::path scratch;
  kb::Json expected = kb::readJsonFile(sourceRoot() / "testdata/solutions-cpu/expected.json");
  kb::build::BuildOptions build;
  kb::verify::VerifyOptions verify;

  explicit CpuBatch(const std::string& name)
      : scratch(fs::temp_directory_path() / (name + std::to_string(::getpid()))) {
    fs::create_directories(scratch);
    build.target = kb::build::BuildTarget::Cpu;
    build.cache_dir = scratch / "cache";
    verify.device = "cpu";
    verify.limits.wall_seconds = 5;
    verify.limits.cpu_seconds = 5;
    verify.memory_budget_bytes = 2ull << 30;
    verify.scratch_dir = scratch;
  }
};

// verifySolutions: several candidates of one task, one reference worker for
// all of them. Each must get the status it gets alone, whatever its
// neighbours in the batch did (a forged channel, a crash, a wrong answer).
TEST(VerifyBatch, SeveralCandidatesShareOneReferenceWorker) {
  CpuBatch batch("kb_verify_many_");
  const fs::path& scratch = batch.scratch;
  const kb::Json& expected = batch.expected;
  const kb::build::BuildOptions& build = batch.build;
  const kb::verify::VerifyOptions& verify = batch.verify;
  const std::vector<std::string> names = {"ok_linear_relu", "forge_result", "wrong_result", "segfault",
                                          "tol_inside",     "inplace_input", "off_by_one", "ok_with_init"};
  std::vector<fs::path> libraries;
  for (const std::string& name : names) {
    kb::build::BuildResult b = kb::build::buildSolution(kb::solution::loadSolution(sourceRoot() / "testdata/solutions-cpu" / name), build);
    ASSERT_EQ(b.status, kb::Status::Ok) << name << ": " << b.diagnostics;
    libraries.push_back(b.library);
  }
  const fs::path task = sourceRoot() / "testdata/tasks/linear_relu";
  std::vector<kb::verify::VerifyResult> results = kb::verify::verifySolutions(task, libraries, verify);
  ASSERT_EQ(results.size(), names.size());
  for (size_t k = 0; k < names.size(); ++k) {
    SCOPED_TRACE(names[k]);
    EXPECT_EQ(std::string(kb::statusName(results[k].status)),
              expected["solutions"][names[k]]["status"].get<std::string>())
        << results[k].message;
    if (results[k].status == kb::Status::Ok) EXPECT_EQ(results[k].seeds.size(), results[0].seeds.size());
  }
  // The ok ones were checked on every seed by the one reference process.
  EXPECT_FALSE(results[0].seeds.empty());
  EXPECT_GT(results[0].reference_seconds, 0.0);
  EXPECT_THROW(kb::verify::verifySolutions(task, {}, verify), kb::UsageError);
  expectOnlyTheCacheLeft(scratch);
}

// Seeds whose records do not fit the channel together are verified in runs
// (KernelBench level 1's 6 GiB outputs x 5 seeds): a channel limit of one
// seed's records makes one run per seed. The ok candidate is checked on
// every seed; a wrong one fails its first run and is not run again; a
// candidate forging its channel is caught within its run.
TEST(VerifyBatch, SeedsInRunsWhenTheirChannelsDoNotFitTogether) {
  CpuBatch batch("kb_verify_runs_");
  kb::verify::VerifyOptions verify = batch.verify;
  const fs::path task = sourceRoot() / "testdata/tasks/linear_relu";
  kb::task::TaskInfo info = kb::task::openBundle(task).info;
  const uint64_t one_seed = 16 * 24 * 4 + (1u << 20) + (16u << 20);
  verify.channel_limit_bytes = one_seed + 1024;
  EXPECT_EQ(kb::verify::seedsPerRun(info, 3, 1, batch.scratch, verify.channel_limit_bytes), 1u);
  EXPECT_EQ(kb::verify::seedsPerRun(info, 3, 1, batch.scratch, one_seed + 16 * 24 * 4 + (1u << 20)), 2u);
  EXPECT_EQ(kb::verify::seedsPerRun(info, 3, 1, batch.scratch, 0), 3u);
  const std::vector<std::string> names = {"ok_linear_relu", "wrong_result", "forge_result"};
  std::vector<fs::path> libraries;
  for (const std::string& name : names) {
    kb::build::BuildResult b =
        kb::build::buildSolution(kb::solution::loadSolution(sourceRoot() / "testdata/solutions-cpu" / name), batch.build);
    ASSERT_EQ(b.status, kb::Status::Ok) << name << ": " << b.diagnostics;
    libraries.push_back(b.library);
  }
  std::vector<kb::verify::VerifyResult> results = kb::verify::verifySolutions(task, libraries, verify);
  ASSERT_EQ(results.size(), names.size());
  EXPECT_EQ(results[0].status, kb::Status::Ok) << results[0].message;
  // The correctness seeds, then their domain draws (task/bundle.h), one run each.
  const std::vector<uint64_t> seeds = kb::task::verificationSeeds(info);
  ASSERT_EQ(seeds.size(), 6u);
  EXPECT_EQ(results[0].seed_runs, 6);
  ASSERT_EQ(results[0].seeds.size(), seeds.size());
  for (size_t s = 0; s < seeds.size(); ++s) EXPECT_EQ(results[0].seeds[s].seed, seeds[s]);
  EXPECT_EQ(results[0].toJson()["seed_runs"], 6);
  EXPECT_EQ(results[0].toJson()["seeds"][2]["draw"], "generator");
  EXPECT_EQ(results[0].toJson()["seeds"][3]["draw"], "domain");
  for (size_t k = 1; k < names.size(); ++k) {
    SCOPED_TRACE(names[k]);
    EXPECT_EQ(std::string(kb::statusName(results[k].status)),
              batch.expected["solutions"][names[k]]["status"].get<std::string>())
        << results[k].message;
    EXPECT_EQ(results[k].seed_runs, 1);
  }
  // The same verdicts in one run when the channel fits.
  verify.channel_limit_bytes = 0;
  kb::verify::VerifyResult whole = kb::verify::verifySolution(task, libraries[0], verify);
  EXPECT_EQ(whole.status, kb::Status::Ok);
  EXPECT_EQ(whole.seed_runs, 1);
  EXPECT_EQ(whole.seeds.size(), seeds.size());
  // Not even one seed fits: the machine's limit, before any work.
  verify.channel_limit_bytes = 1u << 20;
  EXPECT_THROW(kb::verify::verifySolution(task, libraries[0], verify), kb::Error);
  expectOnlyTheCacheLeft(batch.scratch);
}

TEST(VerifyBatch, EverySolutionGetsItsStatusAndTheHarnessSurvives) {
  const fs::path escape = "/tmp/kb-harness-escape.txt";
  fs::remove(escape);
  CpuBatch batch("kb_verify_batch_");
  const fs::path& scratch = batch.scratch;
  const kb::Json& expected = batch.expected;
  const kb::build::BuildOptions& build = batch.build;
  kb::verify::VerifyOptions& verify = batch.verify;

  int checked = 0;
  for (const auto& [name, want] : expected["solutions"].items()) {
    SCOPED_TRACE(name);
    kb::solution::Solution sol = kb::solution::loadSolution(sourceRoot() / "testdata/solutions-cpu" / name);
    kb::build::BuildResult b = kb::build::buildSolution(sol, build);
    ASSERT_EQ(b.status, kb::Status::Ok) << b.diagnostics;
    kb::verify::VerifyResult r = kb::verify::verifySolution(
        sourceRoot() / "testdata/tasks" / want["task"].get<std::string>(), b.library, verify);
    EXPECT_EQ(std::string(kb::statusName(r.status)), want["status"].get<std::string>())
        << r.message << "\nworker output: " << r.worker.process.output.substr(0, 2000);
    if (want.contains("message")) {
      EXPECT_NE(r.message.find(want["message"].get<std::string>()), std::string::npos) << r.message;
    }
    EXPECT_EQ(r.message.find("ESCAPED"), std::string::npos) << r.message;
    if (name == "stdout_flood") {
      EXPECT_TRUE(r.worker.process.output_truncated);
      EXPECT_GE(r.worker.process.output_bytes, 256ull << 20);
      EXPECT_LE(r.worker.process.output.size(), verify.limits.output_limit);
    }
    if (r.status == kb::Status::Ok) {
      ASSERT_FALSE(r.seeds.empty());
      for (const auto& s : r.seeds) EXPECT_EQ(s.status, kb::Status::Ok);
    }
    // The confinement was in place for every run that got that far.
    if (r.worker.started) {
      EXPECT_NE(r.worker.hello.value("confinement", "").find("seccomp"), std::string::npos);
    }
    ++checked;
  }
  EXPECT_GE(checked, 25);
  EXPECT_FALSE(fs::exists(escape)) << "a solution wrote outside its working directory";
  // Nothing left behind: every worker directory was removed.
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(scratch))
    if (e.path().filename().string().rfind("kbcheck-worker-", 0) == 0) ++leftovers;
  EXPECT_EQ(leftovers, 0);
  fs::remove_all(scratch);
}

TEST(VerifyBatch, BadTaskOrDeviceIsAUsageError) {
  kb::verify::VerifyOptions verify;
  verify.device = "cpu";
  EXPECT_THROW(kb::verify::verifySolution("/nonexistent/task", "/nonexistent.so", verify), kb::UsageError);
  verify.device = "tpu";
  EXPECT_THROW(kb::verify::verifySolution(sourceRoot() / "testdata/tasks/linear_relu", "/nonexistent.so", verify),
               kb::UsageError);
}

// kbprof's order: both workers start before the library exists, get ready,
// wait; the candidate's gets the library once built, the reference's its
// request once the candidate's worker is gone.
TEST(VerifyBatch, WorkersStartedAheadOfTheLibraryAndTheRequest) {
  fs::path scratch = fs::temp_directory_path() / ("kb_verify_ahead_" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  kb::build::BuildOptions build;
  build.target = kb::build::BuildTarget::Cpu;
  build.cache_dir = scratch / "cache";
  kb::build::BuildResult b = kb::build::buildSolution(kb::solution::loadSolution(sourceRoot() / "testdata/solutions-cpu/ok_linear_relu"), build);
  ASSERT_EQ(b.status, kb::Status::Ok) << b.diagnostics;
  fs::path task = sourceRoot() / "testdata/tasks/linear_relu";
  kb::Json info = kb::readJsonFile(task / "task.json");
  std::vector<uint64_t> seeds = info["correctness_seeds"].get<std::vector<uint64_t>>();
  ASSERT_FALSE(seeds.empty());
  fs::path binary = kb::verify::findWorkerBinary();

  kb::verify::WorkerRequest req;
  req.task_dir = task;
  req.device = "cpu";
  req.seeds = seeds;
  req.memory_budget_bytes = 2ull << 30;
  kb::verify::WorkerLimits limits;
  limits.wall_seconds = 1;  // counts from the hand-over, not from the start
  {
    kb::verify::CandidateWorker worker(req, limits, binary, scratch, /*keep_dir=*/true);
    kb::verify::ReferenceWorker reference(task, "cpu", seeds, scratch, binary, 30);
    ::usleep(4000 * 1000);  // "the build": longer than the worker's own limit (and its start-up, under load)
    kb::verify::WorkerRun run = worker.finish(b.library);
    ASSERT_EQ(run.status, kb::Status::Ok) << run.message << "\n" << run.process.output;
    kb::verify::WorkerDirGuard cleanup(run, false);
    EXPECT_GT(run.hello.value("waited_seconds", 0.0), 0.3);
    EXPECT_LT(run.hello.value("startup_seconds", 99.0), run.process.wall_seconds);
    EXPECT_NE(run.hello.value("confinement", "").find("seccomp"), std::string::npos);
    kb::verify::CompareRequest cmp;
    cmp.task_dir = task;
    cmp.device = "cpu";
    cmp.seeds = seeds;
    cmp.candidate_results = {run.dir / "result.bin"};
    kb::verify::ReferenceVerdict v = reference.finish(cmp);
    EXPECT_EQ(v.status, kb::Status::Ok) << v.message;
    EXPECT_EQ(v.seeds.size(), seeds.size());
    EXPECT_EQ(v.phases.value("inputs_prefetched", 0), static_cast<int>(seeds.size()));
  }
  // Never handed anything (the build failed): both leave, nothing is left.
  {
    kb::verify::CandidateWorker worker(req, limits, binary, scratch);
    kb::verify::ReferenceWorker reference(task, "cpu", seeds, scratch, binary, 30);
    ::usleep(300 * 1000);
  }
  // A request for another task is refused, not answered.
  {
    kb::verify::ReferenceWorker reference(task, "cpu", seeds, scratch, binary, 30);
    kb::verify::CompareRequest other;
    other.task_dir = sourceRoot() / "testdata/tasks/scale_and_rowsum";
    other.device = "cpu";
    other.seeds = seeds;
    other.candidate_results = {scratch / "none.bin"};
    kb::verify::ReferenceVerdict v = reference.finish(other);
    EXPECT_EQ(v.status, kb::Status::InfraError);
    EXPECT_NE(v.message.find("this worker was started for"), std::string::npos) << v.message;
  }
  expectOnlyTheCacheLeft(scratch);
}

TEST(VerifyBatch, MissingLibraryIsTheSolutionsRuntimeError) {
  kb::verify::VerifyOptions verify;
  verify.device = "cpu";
  kb::verify::VerifyResult r =
      kb::verify::verifySolution(sourceRoot() / "testdata/tasks/linear_relu", "/nonexistent/solution.so", verify);
  EXPECT_EQ(r.status, kb::Status::RuntimeError);
  EXPECT_NE(r.message.find("cannot load the solution"), std::string::npos) << r.message;
}

// The candidate worker's output cap and result channel follow the task's
// outputs: KernelBench level1/19_ReLU returns 6 GiB a call, and a fixed
// 4 GiB channel cut an honest candidate's seed record, which then read as a
// forged channel (hack_detected, on the H200). The disk bounds the channel,
// and a disk too small for the honest size is the machine's limit (kb::Error).
TEST(SizeWorkerForTask, ChannelFollowsTheOutputsAndTheDisk) {
  kb::task::TaskInfo info;
  info.generator = "spec";
  info.outputs = {{"float32", {4, 8}}};  // 128 bytes
  kb::verify::WorkerRequest req;
  kb::verify::WorkerLimits limits;
  kb::verify::sizeWorkerForTask(info, 5, 1, fs::temp_directory_path(), req, limits);
  EXPECT_EQ(req.max_output_bytes, 4u * 128 + (1u << 20));
  EXPECT_GE(limits.result_limit, 5u * (128 + (1u << 20)) + (16u << 20));  // the honest size fits
  EXPECT_LE(limits.result_limit, 5u * (req.max_output_bytes + (1u << 20)) + (16u << 20));
  // Inputs do not travel: a scripted generator's unknown input size adds nothing.
  uint64_t spec_limit = limits.result_limit;
  info.generator = "scripted";
  kb::verify::sizeWorkerForTask(info, 5, 1, fs::temp_directory_path(), req, limits);
  EXPECT_EQ(limits.result_limit, spec_limit);

  info.outputs = {{"float32", {4096, 393216}}};  // 6 GiB
  const uint64_t out = 4096ull * 393216 * 4;
  std::error_code ec;
  const uint64_t free = fs::space(fs::temp_directory_path(), ec).available;
  if (!ec && free > out + (2ull << 30)) {
    kb::verify::sizeWorkerForTask(info, 1, 1, fs::temp_directory_path(), req, limits);
    EXPECT_GE(limits.result_limit, out + (1u << 20));  // more than the old fixed 4 GiB
    EXPECT_LE(limits.result_limit, free);
    // A flood stops at twice the honest size, not at the disk's edge.
    EXPECT_LE(limits.result_limit, 2 * (out + (1u << 20)) + (32u << 20));
  }
  // A batch keeps every candidate's channel: each gets its share of the disk,
  // and a batch whose honest channels do not fit together is refused.
  if (!ec && free > (4ull << 30)) {
    const uint64_t n = free / (out + (1u << 20)) + 1;
    try {
      kb::verify::sizeWorkerForTask(info, 1, n, fs::temp_directory_path(), req, limits);
      ADD_FAILURE() << "no error for " << n << " candidates of 6 GiB on " << (free >> 30) << " GiB";
    } catch (const kb::Error& e) {
      EXPECT_NE(std::string(e.what()).find("candidates"), std::string::npos) << e.what();
    }
  }
  // A run whose honest size no disk holds: the machine's limit, said before any work.
  try {
    kb::verify::sizeWorkerForTask(info, 1u << 20, 1, fs::temp_directory_path(), req, limits);
    ADD_FAILURE() << "no error";
  } catch (const kb::UsageError&) {
    ADD_FAILURE() << "a full disk is not bad usage";
  } catch (const kb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("result channel"), std::string::npos) << e.what();
  }
  // The time limits are the candidate's: the harness's work on a seed's
  // inputs and outputs (4 s a GiB) is added, nothing for small tasks.
  kb::task::TaskInfo big;
  big.generator = "spec";
  big.outputs = {{"float32", {64, 1024, 1024}}};  // 256 MiB
  big.inputs = {kb::task::InputSpec{"tensor", "float32", {3, 256, 1024, 1024}}};  // 3 GiB
  kb::verify::WorkerLimits timed;
  kb::verify::sizeWorkerForTask(big, 2, 1, fs::temp_directory_path(), req, timed, /*channel_cap=*/0);
  EXPECT_NEAR(timed.wall_seconds, 60.0 + 2 * 3.25 * 4.0, 1e-6);
  EXPECT_EQ(timed.cpu_seconds, 60u + 26u);
  kb::verify::WorkerLimits small;
  kb::task::TaskInfo tiny;
  tiny.outputs = {{"float32", {4, 8}}};
  kb::verify::sizeWorkerForTask(tiny, 5, 1, fs::temp_directory_path(), req, small);
  EXPECT_NEAR(small.wall_seconds, 60.0, 1e-3);
  // The host memory budget is the candidate's too: the harness's host copy
  // of one record's outputs (whatever the number of records) is added; no
  // budget stays no budget.
  kb::verify::WorkerRequest budgeted;
  budgeted.memory_budget_bytes = 4ull << 30;
  kb::verify::WorkerLimits any;
  kb::verify::sizeWorkerForTask(big, 5, 1, fs::temp_directory_path(), budgeted, any, /*channel_cap=*/0);
  EXPECT_EQ(budgeted.memory_budget_bytes, (4ull << 30) + (256ull << 20));
  kb::verify::WorkerRequest unlimited;
  unlimited.memory_budget_bytes = 0;
  kb::verify::sizeWorkerForTask(big, 5, 1, fs::temp_directory_path(), unlimited, any, /*channel_cap=*/0);
  EXPECT_EQ(unlimited.memory_budget_bytes, 0u);
}

}  // namespace

