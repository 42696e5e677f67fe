// The toy family's environments (lib/toy/environment.h) and its episodes through
// lib/agent's loop (lib/toy/episode.h), on the CPU: the "kbcheck"
// environment builds with the host compiler and the CUDA stand-in and
// verifies with the real workers (lib/eval) against bundles captured by
// `kbsynth import` (testdata/rl/toy-bundles, tasks toy-0..toy-3); the "expr"
// environment runs the evaluator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/gpu_info.h"
#include "toy/environment.h"
#include "toy/episode.h"

namespace fs = std::filesystem;

namespace kb::toy {
namespace {

fs::path root() { return fs::path(std::getenv("KB_SOURCE_ROOT")); }

std::string kernel(const std::string& body) {
  return "__global__ void k(const float* x, float* y, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) y[i] = " + body + ";\n}";
}

class ToyEnv : public ::testing::Test {
 protected:
  fs::path work = fs::temp_directory_path() / ("kb-toy-env-test-" + std::to_string(::getpid()));
  void TearDown() override { fs::remove_all(work); }
  ToyEnvOptions options() const {
    ToyEnvOptions o;
    o.bundles = root() / "testdata/rl/toy-bundles";
    o.device = "cpu";
    o.jobs = 2;
    o.work_dir = work / "solutions";
    o.build_cache = work / "cache";
    return o;
  }
};

// compile, then verify when it compiled: the final check's order.
agent::StageResult judged(ToyEnvironment& env, const ToyTask& task, const std::string& answer) {
  const fs::path dir = env.writeAnswer(task, answer);
  agent::StageResult c = env.compile(dir);
  return c.status == Status::Ok ? env.verify(dir) : c;
}

TEST_F(ToyEnv, KbcheckScoresABatchByTaskWithEachDistinctAnswerOnce) {
  std::unique_ptr<ToyEnvironment> env = makeKbcheckToyEnvironment(options());
  const ToyTask t0 = makeToyTask(0), t1 = makeToyTask(1);
  std::vector<ToyTask> tasks = {t0, t0, t1, t0, t1, t1};
  std::vector<std::string> answers = {
      toyDemonstration(t0),               // right
      toyDemonstration(t0),               // the same pair again: scored once
      kernel("x[i] * 1234.0f"),           // builds, wrong values
      "this is not CUDA",                 // does not compile
      toyDemonstration(t1),               // right
      std::string("y[i] = x[i];\0", 13),  // a NUL byte: not source code
  };
  env->prepare(tasks, answers);
  Json stats = env->stats();
  EXPECT_EQ(stats["distinct"], 5);
  EXPECT_EQ(stats["cached"], 0);
  EXPECT_EQ(stats["compile_errors"], 2);
  EXPECT_EQ(stats["verified"], 3);
  EXPECT_EQ(stats["correct"], 2);
  EXPECT_EQ(stats["infra_errors"], 0);
  std::vector<agent::StageResult> s;
  for (size_t i = 0; i < tasks.size(); ++i) s.push_back(judged(*env, tasks[i], answers[i]));
  EXPECT_EQ(s[0].status, Status::Ok) << s[0].text;
  EXPECT_EQ(s[0].stage, "verify");
  EXPECT_EQ(s[0].report["reason"], "ok");
  EXPECT_EQ(s[1].status, Status::Ok);
  EXPECT_EQ(s[2].status, Status::Incorrect) << s[2].text;
  EXPECT_EQ(s[2].report["reason"], "incorrect");
  EXPECT_EQ(s[3].status, Status::CompileError) << s[3].text;
  EXPECT_EQ(s[3].stage, "compile");
  EXPECT_FALSE(s[3].report["message"].get<std::string>().empty());
  EXPECT_EQ(s[4].status, Status::Ok) << s[4].text;
  EXPECT_EQ(s[5].status, Status::CompileError) << s[5].text;
  // Judging the prepared pairs built and verified nothing more.
  EXPECT_EQ(env->stats()["verified"], 3);
  // The solution directories are kept in work_dir: the answer spliced into the template.
  EXPECT_EQ(readToyAnswer(env->writeAnswer(t0, answers[0])), answers[0]);

  // With a verdict cache, a second environment builds and verifies nothing it has seen.
  ToyEnvOptions o = options();
  o.verdict_cache = work / "verdicts.jsonl";
  makeKbcheckToyEnvironment(o)->prepare(tasks, answers);
  std::unique_ptr<ToyEnvironment> again = makeKbcheckToyEnvironment(o);
  again->prepare(tasks, answers);
  stats = again->stats();
  EXPECT_EQ(stats["cached"], 5);
  EXPECT_EQ(stats["verified"], 0);
  EXPECT_EQ(stats["correct"], 2);
  EXPECT_EQ(stats["compile_errors"], 2);
  for (size_t i = 0; i < tasks.size(); ++i) {
    agent::StageResult c = judged(*again, tasks[i], answers[i]);
    EXPECT_EQ(c.status, s[i].status) << i;
    EXPECT_TRUE(c.report["cached"].get<bool>()) << i;
  }
}

TEST_F(ToyEnv, KbcheckJudgesAnAnswerItWasNotPreparedFor) {
  // Scored once, the first time compile asks (built, then verified); verify reads that verdict.
  std::unique_ptr<ToyEnvironment> env = makeKbcheckToyEnvironment(options());
  const ToyTask t = makeToyTask(2);
  const fs::path right = env->writeAnswer(t, toyDemonstration(t));
  EXPECT_EQ(env->compile(right).status, Status::Ok) << env->compile(right).text;
  agent::StageResult v = env->verify(right);
  EXPECT_EQ(v.status, Status::Ok) << v.text;
  const fs::path wrong = env->writeAnswer(t, kernel("x[i] + 1000.0f"));
  EXPECT_EQ(env->compile(wrong).status, Status::Ok);
  EXPECT_EQ(env->verify(wrong).status, Status::Incorrect);
  EXPECT_EQ(env->compile(env->writeAnswer(t, "int k(")).status, Status::CompileError);
  // No shell, no profile; a directory it did not write is refused.
  EXPECT_FALSE(env->bash(work, "true", 1).started);
  EXPECT_FALSE(env->profile(right).available);
  EXPECT_THROW(env->compile(work), Error);
}

TEST_F(ToyEnv, EpisodeThroughTheLoopCarriesTheToyRecord) {
  std::unique_ptr<ToyEnvironment> env = makeKbcheckToyEnvironment(options());
  const ToyTask t = makeToyTask(3);
  chat::Completion reply;
  reply.content = toyDemonstration(t);
  reply.finish_reason = "stop";
  reply.token_ids = {5, 6, 7};
  reply.logprobs = {-0.5, -0.25, -0.125};
  reply.prompt_token_ids = {1, 2};
  chat::SamplingParams sp;
  sp.seed = 9;
  Json r = runToyEpisode(t, 1, reply, {{"kind", "test"}}, *env, toyRolloutOptions(sp, "eval"));
  EXPECT_EQ(r["tool"], "kbtrain-toy");
  EXPECT_EQ(r["rollout_id"], t.id + "#1");
  EXPECT_EQ(r["mode"], "eval");
  EXPECT_EQ(r["sampling"]["seed"], 9);  // the batch's seed, as used
  EXPECT_FALSE(r.contains("workspace"));
  EXPECT_EQ(r["end"]["reason"], "finish");
  EXPECT_EQ(r["messages"].size(), 3u);
  EXPECT_EQ(r["messages"][2]["content"], reply.content);
  ASSERT_EQ(r["turns"].size(), 1u);
  EXPECT_EQ(r["turns"][0]["prompt_messages"], 2);
  EXPECT_EQ(r["turns"][0]["response"]["token_ids"], Json({5, 6, 7}));
  EXPECT_EQ(r["turns"][0]["response"]["prompt_token_ids"], Json({1, 2}));
  EXPECT_EQ(r["status"], "ok") << r["final"].dump();
  EXPECT_EQ(r["final"]["check"], "ok");
  EXPECT_EQ(r["final"]["stages"]["verify"]["status"], "ok");
  EXPECT_EQ(r["reward"]["scheme"]["name"], "toy");
  EXPECT_EQ(r["reward"]["value"], 1.0);
  EXPECT_TRUE(r["reward"]["excluded"].is_null());

  reply.content = "this is not CUDA";
  Json bad = runToyEpisode(t, 2, reply, {{"kind", "test"}}, *env, toyRolloutOptions(sp, "train"));
  EXPECT_EQ(bad["status"], "compile_error");
  EXPECT_EQ(bad["final"]["check"], "compile_error");
  EXPECT_FALSE(bad["final"]["message"].get<std::string>().empty());
  EXPECT_FALSE(bad["final"]["stages"].contains("verify"));
  EXPECT_EQ(bad["reward"]["value"], -1.0);
}

TEST_F(ToyEnv, ExprEnvironmentIsTheEvaluator) {
  std::unique_ptr<ToyEnvironment> env = makeExprToyEnvironment();
  const ToyTask t = makeToyTask(4);
  EXPECT_EQ(judged(*env, t, toyDemonstration(t)).status, Status::Ok);
  agent::StageResult wrong = judged(*env, t, kernel("x[i] * 1234.0f"));
  EXPECT_EQ(wrong.status, Status::Incorrect);
  EXPECT_EQ(wrong.report["reason"], "wrong_value");
  agent::StageResult none = judged(*env, t, "no kernel here");
  EXPECT_EQ(none.status, Status::Incorrect);  // the evaluator's statuses: ok or incorrect
  EXPECT_EQ(none.report["reason"], "no_kernel_line");
  chat::Completion reply;
  reply.content = "y[i] = x[i] +;";
  Json r = runToyEpisode(t, 0, reply, {{"kind", "test"}}, *env, toyRolloutOptions({}, "train"));
  EXPECT_EQ(r["status"], "incorrect");
  EXPECT_EQ(r["final"]["check"].get<std::string>().rfind("parse_error: ", 0), 0u) << r["final"].dump();
  EXPECT_FALSE(r["final"].contains("message"));
  EXPECT_EQ(r["reward"]["value"], -1.0);
}

TEST_F(ToyEnv, MissingBundleIsAUsageError) {
  ToyEnvOptions o = options();
  o.bundles = root() / "testdata/rl/no-such-bundles";
  const ToyTask t = makeToyTask(0);
  EXPECT_THROW(makeKbcheckToyEnvironment(o)->prepare({t}, {toyDemonstration(t)}), UsageError);
}

TEST(ToyEnvironment, DeviceListIsCheckedAndSplit) {
  EXPECT_EQ(toyEnvDevices("cpu"), std::vector<std::string>{"cpu"});
  EXPECT_THROW(toyEnvDevices(""), UsageError);
  EXPECT_THROW(toyEnvDevices("cpu,"), UsageError);
  EXPECT_THROW(toyEnvDevices("tpu"), UsageError);
  if (!hasNvidiaGpu()) {
    // No GPU here: the machine's fault (exit 3 in the tools), not a usage error.
    try {
      toyEnvDevices("cuda:0,cuda:1");
      ADD_FAILURE() << "cuda devices accepted without a GPU";
    } catch (const UsageError&) {
      ADD_FAILURE() << "no GPU reported as a usage error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no NVIDIA GPU"), std::string::npos) << e.what();
    }
  } else {
    EXPECT_EQ(toyEnvDevices("cuda:0,cuda:0").size(), 2u);
    EXPECT_THROW(toyEnvDevices("cuda:0,cpu"), UsageError);
  }
}

TEST(ToyEnvironment, CudaSolutionSplicesTheKernel) {
  fs::path d = fs::temp_directory_path() / ("kb-toy-sol-" + std::to_string(::getpid()));
  writeToySolution(d, kernel("x[i] * 2.0f"), /*cuda=*/true);
  EXPECT_TRUE(fs::exists(d / "forward.cpp"));
  std::ifstream f(d / "kernels/answer.cu");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("y[i] = x[i] * 2.0f;"), std::string::npos);
  EXPECT_NE(text.find("k<<<"), std::string::npos);
  EXPECT_EQ(readToyAnswer(d), kernel("x[i] * 2.0f"));
  fs::remove_all(d);
}

}  // namespace
}  // namespace kb::toy
