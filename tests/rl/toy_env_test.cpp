// The toy family scored by the real build and verify (lib/rl/toy_env.h),
// on the CPU: the host build with the CUDA stand-in, the verifier's workers
// against bundles captured by `kbsynth import` (testdata/rl/toy-bundles,
// tasks toy-0..toy-3).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/gpu_info.h"
#include "rl/toy_env.h"

namespace fs = std::filesystem;

namespace kb::rl {
namespace {

fs::path root() { return fs::path(std::getenv("KB_SOURCE_ROOT")); }

std::string kernel(const std::string& body) {
  return "__global__ void k(const float* x, float* y, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) y[i] = " + body + ";\n}";
}

TEST(ToyEnvironment, BuildsAndVerifiesEachDistinctAnswerOnce) {
  ToyEnvOptions o;
  o.bundles = root() / "testdata/rl/toy-bundles";
  o.device = "cpu";
  o.jobs = 2;
  o.work_dir = fs::temp_directory_path() / ("kb-toy-env-test-" + std::to_string(::getpid()));
  o.build_cache = o.work_dir / "cache";
  const ToyTask t0 = makeToyTask(0), t1 = makeToyTask(1);
  std::vector<ToyTask> tasks = {t0, t0, t1, t0, t1};
  std::vector<std::string> answers = {
      toyDemonstration(t0),                      // right
      toyDemonstration(t0),                      // the same pair again: scored once
      kernel("x[i] * 1234.0f"),                  // builds, wrong values
      "this is not CUDA",                        // does not compile
      toyDemonstration(t1),                      // right
      std::string("y[i] = x[i];\0", 13),         // a NUL byte: not source code
  };
  tasks.push_back(t1);
  Json stats;
  std::vector<ToyScore> s = scoreToyAnswersInEnvironment(tasks, answers, o, &stats);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_TRUE(s[0].correct) << s[0].reason << ": " << s[0].message;
  EXPECT_EQ(s[0].reward, 1);
  EXPECT_EQ(s[0].status, "ok");
  EXPECT_TRUE(s[1].correct);
  EXPECT_FALSE(s[2].correct);
  EXPECT_EQ(s[2].reward, -1);
  EXPECT_EQ(s[2].status, "incorrect") << s[2].message;
  EXPECT_EQ(s[3].status, "compile_error") << s[3].message;
  EXPECT_EQ(s[3].reward, -1);
  EXPECT_FALSE(s[3].excluded);
  EXPECT_TRUE(s[4].correct) << s[4].reason << ": " << s[4].message;
  EXPECT_EQ(s[5].status, "compile_error") << s[5].message;
  EXPECT_FALSE(s[5].excluded);
  EXPECT_EQ(stats["distinct"], 5);
  EXPECT_EQ(stats["compile_errors"], 2);
  EXPECT_EQ(stats["verified"], 3);
  EXPECT_EQ(stats["correct"], 2);
  EXPECT_EQ(stats["infra_errors"], 0);
  // The solution directories are kept in work_dir: the answer spliced into the template.
  EXPECT_TRUE(fs::exists(o.work_dir / t0.id));

  // With a verdict cache, a second call builds and verifies nothing it has seen.
  o.verdict_cache = o.work_dir / "verdicts.jsonl";
  scoreToyAnswersInEnvironment(tasks, answers, o, &stats);
  EXPECT_EQ(stats["cached"], 0);
  std::vector<ToyScore> again = scoreToyAnswersInEnvironment(tasks, answers, o, &stats);
  EXPECT_EQ(stats["cached"], 5);
  EXPECT_EQ(stats["verified"], 0);
  EXPECT_EQ(stats["correct"], 2);
  EXPECT_EQ(stats["compile_errors"], 2);
  ASSERT_EQ(again.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(again[i].status, s[i].status) << i;
    EXPECT_EQ(again[i].reward, s[i].reward) << i;
  }
  fs::remove_all(o.work_dir);
}

TEST(ToyEnvironment, MissingBundleIsAUsageError) {
  ToyEnvOptions o;
  o.bundles = root() / "testdata/rl/no-such-bundles";
  const ToyTask t = makeToyTask(0);
  EXPECT_THROW(scoreToyAnswersInEnvironment({t}, {toyDemonstration(t)}, o), UsageError);
}

TEST(ToyEnvironment, DeviceListIsCheckedAndSplit) {
  EXPECT_EQ(toyEnvDevices("cpu"), std::vector<std::string>{"cpu"});
  EXPECT_THROW(toyEnvDevices(""), UsageError);
  EXPECT_THROW(toyEnvDevices("cpu,"), UsageError);
  EXPECT_THROW(toyEnvDevices("tpu"), UsageError);
  if (!hasNvidiaGpu()) {
    EXPECT_THROW(toyEnvDevices("cuda:0,cuda:1"), UsageError);  // no GPU here
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
  fs::remove_all(d);
}

}  // namespace
}  // namespace kb::rl
