// lib/task through LibTorch, on bundles that kbsynth_test.sh exported from
// testdata/tasks-src (KB_TASK_BUNDLES names the folder; skipped without it).
#include "task/task.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <unistd.h>
#include <fstream>

#include "core/error.h"
#include "python/scripts.h"

namespace fs = std::filesystem;

namespace {

fs::path bundles() {
  const char* dir = std::getenv("KB_TASK_BUNDLES");
  return dir ? fs::path(dir) : fs::path();
}

// Run only by kbsynth_test.sh, which sets it: a missing bundle folder is a
// failure, never a skip that would read as a pass.
#define NEED_BUNDLES()                                                         \
  if (bundles().empty()) GTEST_FAIL() << "KB_TASK_BUNDLES not set (run by kbsynth_test.sh)"

const c10::Device kCpu(c10::kCPU);

kb::task::Task open(const std::string& id) { return kb::task::Task::open(bundles() / id); }

TEST(Task, InputsAreReproducibleForASeed) {
  NEED_BUNDLES();
  for (const char* id : {"kernelbench/level1/1_ReLU_Scale", "kernelbench/level1/4_Sum_Scalar_Dim"}) {
    kb::task::Task t = open(id);
    auto a = t.makeInputs(7, kCpu), b = t.makeInputs(7, kCpu), c = t.makeInputs(8, kCpu);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_TRUE(a[0].isTensor());
    EXPECT_TRUE(a[0].toTensor().equal(b[0].toTensor())) << id;
    EXPECT_FALSE(a[0].toTensor().equal(c[0].toTensor())) << id;
    // Fresh tensors every call.
    EXPECT_NE(a[0].toTensor().data_ptr(), b[0].toTensor().data_ptr());
  }
}

TEST(Task, PrefetchedInputsEqualFreshOnes) {
  NEED_BUNDLES();
  for (const char* id : {"kernelbench/level1/1_ReLU_Scale", "kernelbench/level1/4_Sum_Scalar_Dim",
                         "kernelbench/level1/3_CrossEntropy_Targets"}) {
    kb::task::Task fresh = open(id), ahead = open(id);
    EXPECT_EQ(ahead.prefetchInputs({3, 4, 5, 3}), 3u) << id;  // a repeated seed is made once
    for (uint64_t seed : {5, 3, 4}) {
      auto want = fresh.makeInputs(seed, kCpu), got = ahead.makeInputs(seed, kCpu);
      ASSERT_EQ(want.size(), got.size()) << id;
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (want[i].isTensor()) EXPECT_TRUE(want[i].toTensor().equal(got[i].toTensor())) << id << " seed " << seed;
        else EXPECT_EQ(want[i], got[i]) << id << " seed " << seed;
      }
    }
    // Taken once: the next call makes a fresh set, equal in value.
    auto again = ahead.makeInputs(3, kCpu), fresh3 = fresh.makeInputs(3, kCpu);
    EXPECT_TRUE(again[0].toTensor().equal(fresh3[0].toTensor())) << id;
  }
  // The byte cap keeps the first seed and stops before going over.
  kb::task::Task capped = open("kernelbench/level1/1_ReLU_Scale");
  EXPECT_EQ(capped.prefetchInputs({1, 2, 3}, 1), 1u);
}

TEST(Task, ScalarAndIntegerInputs) {
  NEED_BUNDLES();
  kb::task::Task sum = open("kernelbench/level1/4_Sum_Scalar_Dim");
  EXPECT_EQ(sum.info().generator, "spec");
  auto x = sum.makeInputs(0, kCpu);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_TRUE(x[1].isInt());
  EXPECT_EQ(x[1].toInt(), 1);
  at::Tensor t = x[0].toTensor();
  EXPECT_GE(t.min().item<float>(), 0.0f);  // uniform [0, 1): log1p stays finite
  EXPECT_LT(t.max().item<float>(), 1.0f);

  kb::task::Task ce = open("kernelbench/level1/3_CrossEntropy_Targets");
  auto y = ce.makeInputs(3, kCpu);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[1].toTensor().scalar_type(), at::kLong);
  EXPECT_GE(y[1].toTensor().min().item<int64_t>(), 0);
  EXPECT_LT(y[1].toTensor().max().item<int64_t>(), 10);
}

TEST(Task, ReferenceRunsAndFlattensTuples) {
  NEED_BUNDLES();
  kb::task::Task t = open("kernelbench/level1/5_MinMax_Tuple");
  kb::task::Reference ref = t.reference(kCpu);
  auto out = ref.run(t.makeInputs(0, kCpu));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{16}));
  EXPECT_EQ(out[2].dim(), 0);
  EXPECT_TRUE(ref.forward(t.makeInputs(0, kCpu)).isTuple());
  EXPECT_EQ(ref.device(), kCpu);
}

TEST(Task, NamedParametersAndBuffers) {
  NEED_BUNDLES();
  kb::task::Task t = open("kernelbench/level2/1_Conv2d_BatchNorm_Buffer");
  auto state = t.reference(kCpu).state();
  std::map<std::string, kb::task::NamedTensor> by_name;
  for (auto& s : state) by_name[s.name] = s;
  ASSERT_TRUE(by_name.count("conv.weight"));
  EXPECT_FALSE(by_name["conv.weight"].buffer);
  EXPECT_EQ(by_name["conv.weight"].tensor.sizes(), (std::vector<int64_t>{8, 3, 3, 3}));
  ASSERT_TRUE(by_name.count("bn.running_mean"));
  EXPECT_TRUE(by_name["bn.running_mean"].buffer);
  ASSERT_TRUE(by_name.count("channel_scale"));
  EXPECT_TRUE(by_name["channel_scale"].buffer);
  // task.json lists the same names.
  EXPECT_EQ(t.info().state.size(), state.size());
  // Weights come from the init seed: two loads agree.
  auto again = t.reference(kCpu).state();
  EXPECT_TRUE(again[0].tensor.equal(state[0].tensor));
}

TEST(Task, CompiledBaselineMatchesReference) {
  NEED_BUNDLES();
  for (const char* id : {"kernelbench/level1/2_Linear_GELU_Scale", "kernelbench/level2/1_Conv2d_BatchNorm_Buffer",
                         "kernelbench/level1/4_Sum_Scalar_Dim"}) {
    kb::task::Task t = open(id);
    kb::task::CompiledBaseline c = t.compiled(kCpu);
    EXPECT_EQ(c.arch(), "cpu");
    auto x = t.makeInputs(1, kCpu);
    double d = kb::task::maxAbsDiff(c.run(x), t.reference(kCpu).run(x));
    EXPECT_LT(d, 1e-5) << id;
  }
}

TEST(Task, TracedWithFloatBounds) {
  NEED_BUNDLES();
  kb::task::Task t = open("kernelbench/level2/2_Matmul_Hardtanh_FloatBounds");
  EXPECT_EQ(t.info().capture, "trace");
  auto out = t.reference(kCpu).run(t.makeInputs(0, kCpu));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_LE(out[0].max().item<float>(), 0.75f);
  EXPECT_GE(out[0].min().item<float>(), -0.5f);
}

TEST(Task, MissingCompiledSaysWhatToRun) {
  NEED_BUNDLES();
  kb::task::Task t = open("kernelbench/level1/1_ReLU_Scale");
  kb::task::TaskBundle b = t.bundle();
  b.info.json["compiled"].erase("cpu");
  try {
    kb::task::Task(b).compiled(kCpu);
    FAIL() << "no error";
  } catch (const kb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("kbsynth baseline"), std::string::npos) << e.what();
  }
  b = t.bundle();
  b.info.json["compiled"]["cpu"]["torch_version"] = "2.0.0";
  try {
    kb::task::Task(b).compiled(kCpu);
    FAIL() << "no error";
  } catch (const kb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("built by torch 2.0.0"), std::string::npos) << e.what();
  }
}

TEST(Task, EnsureCompiledBuildsOnFirstNeed) {
  NEED_BUNDLES();
  fs::path copy = fs::temp_directory_path() / ("kb_ensure_" + std::to_string(::getpid()));
  fs::remove_all(copy);
  fs::copy(bundles() / "kernelbench/level1/1_ReLU_Scale", copy, fs::copy_options::recursive);
  fs::remove_all(copy / "compiled");
  kb::task::TaskBundle b = kb::task::openBundle(copy);
  ASSERT_TRUE(kb::task::checkCompiled(b, "cpu").has_value());
  b = kb::python::ensureCompiled(b, "cpu", "cpu");
  EXPECT_FALSE(kb::task::checkCompiled(b, "cpu").has_value());
  kb::task::Task t(b);
  auto x = t.makeInputs(0, kCpu);
  EXPECT_EQ(kb::task::maxAbsDiff(t.compiled(kCpu).run(x), t.reference(kCpu).run(x)), 0.0);
  fs::remove_all(copy);
}

TEST(Task, MaxAbsDiff) {
  at::Tensor a = at::ones({2, 2}), b = at::ones({2, 2});
  EXPECT_EQ(kb::task::maxAbsDiff({a}, {b}), 0.0);
  b[0][0] = 1.5;
  EXPECT_DOUBLE_EQ(kb::task::maxAbsDiff({a}, {b}), 0.5);
  EXPECT_TRUE(std::isinf(kb::task::maxAbsDiff({a}, {at::ones({3})})));
  EXPECT_TRUE(std::isinf(kb::task::maxAbsDiff({a}, {})));
  at::Tensor n = at::ones({2, 2});
  n[1][1] = NAN;
  // A NaN against a number is an infinite difference, never NaN (which
  // std::max and <= would lose).
  EXPECT_TRUE(std::isinf(kb::task::maxAbsDiff({a}, {n})));
  EXPECT_TRUE(std::isinf(kb::task::maxAbsDiff({n}, {a})));
  EXPECT_EQ(kb::task::maxAbsDiff({n}, {n.clone()}), 0.0);
}

TEST(Task, MaxAbsDiffNonFiniteReferences) {
  const float inf = INFINITY;
  at::Tensor ref = at::tensor({inf, -inf, NAN, 1.0f});
  EXPECT_EQ(kb::task::maxAbsDiff({ref.clone()}, {ref}), 0.0);  // same infinities, NaN at the same place
  auto diff = [&](std::vector<float> v) { return kb::task::maxAbsDiff({at::tensor(v)}, {ref}); };
  EXPECT_TRUE(std::isinf(diff({0.0f, -inf, NAN, 1.0f})));   // finite where the reference is +inf
  EXPECT_TRUE(std::isinf(diff({-inf, -inf, NAN, 1.0f})));   // the wrong infinity
  EXPECT_TRUE(std::isinf(diff({inf, inf, NAN, 1.0f})));
  EXPECT_TRUE(std::isinf(diff({inf, -inf, 0.0f, 1.0f})));   // a number where the reference is NaN
  EXPECT_TRUE(std::isinf(diff({inf, -inf, inf, 1.0f})));
  EXPECT_TRUE(std::isinf(diff({inf, -inf, NAN, inf})));     // an infinity where it is finite
  EXPECT_DOUBLE_EQ(diff({inf, -inf, NAN, 1.5f}), 0.5);
  // Folded over seeds the way kbsynth check does: the disagreement stays.
  double worst = 0;
  for (double d : {0.0, diff({inf, -inf, 0.0f, 1.0f}), 0.25}) worst = std::max(worst, d);
  EXPECT_TRUE(std::isinf(worst));
}

TEST(Task, ArchOfCpu) { EXPECT_EQ(kb::task::archOf(kCpu), "cpu"); }

}  // namespace
