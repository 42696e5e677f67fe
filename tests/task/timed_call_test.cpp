// The inputs and output digests of timed calls (task/timed_call.h): the
// same seed gives the same values and no two seeds share them; a mix stays
// inside its two base sets; a digest sees every byte.
#include "task/timed_call.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <set>

namespace {

std::filesystem::path task(const char* name) {
  const char* root = std::getenv("KB_SOURCE_ROOT");
  return std::filesystem::path(root ? root : ".") / "testdata/tasks" / name;
}

const c10::Device kCpu(c10::kCPU);

TEST(CallInputs, SpecSameSeedSameValuesOtherSeedOthers) {
  kb::Task t = kb::Task::open(task("linear_relu"));
  ASSERT_EQ(t.info().generator, "spec");
  kb::CallInputs maker(t, kCpu, {});
  EXPECT_EQ(maker.method(), "spec");
  auto a = maker.make(123), b = maker.make(123), c = maker.make(124);
  ASSERT_EQ(a.size(), t.info().inputs.size());
  EXPECT_TRUE(at::equal(a[0].toTensor(), b[0].toTensor()));
  EXPECT_FALSE(at::equal(a[0].toTensor(), c[0].toTensor()));
  // Drawn from the recorded distribution: a standard normal's moments.
  at::Tensor big = at::cat({maker.make(1)[0].toTensor().flatten(), maker.make(2)[0].toTensor().flatten()});
  EXPECT_NEAR(big.mean().item<double>(), t.info().inputs[0].a, 0.2);
}

TEST(CallInputs, MixIsConvexAndNeverRepeats) {
  kb::TaskBundle bundle = kb::openBundle(task("linear_relu"));
  bundle.info.generator = "mixed-for-test";  // CallInputs mixes; makeInputs still draws the spec's base sets
  kb::Task t(bundle);
  kb::CallInputs maker(t, kCpu, {11, 12, 13});
  EXPECT_EQ(maker.method(), "mix");
  std::vector<at::Tensor> bases;
  for (uint64_t s : {11, 12, 13}) bases.push_back(t.makeInputs(s, kCpu)[0].toTensor());
  at::Tensor lo = at::minimum(at::minimum(bases[0], bases[1]), bases[2]);
  at::Tensor hi = at::maximum(at::maximum(bases[0], bases[1]), bases[2]);
  std::set<double> firsts;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    at::Tensor x = maker.make(seed)[0].toTensor();
    EXPECT_TRUE(at::all(x >= lo - 1e-6).item<bool>() && at::all(x <= hi + 1e-6).item<bool>()) << "seed " << seed;
    EXPECT_TRUE(at::equal(x, maker.make(seed)[0].toTensor())) << "seed " << seed;
    firsts.insert(x.flatten()[0].item<double>());
  }
  EXPECT_EQ(firsts.size(), 50u);  // no two calls share their values
  EXPECT_THROW(kb::CallInputs(t, kCpu, {11}), std::exception);  // one base set would repeat
}

TEST(TensorDigest, SeesEveryByteAndTheDtype) {
  at::Tensor x = at::randn({7, 33});
  uint64_t d = kb::tensorDigest(x);
  EXPECT_EQ(d, kb::tensorDigest(x.clone()));
  for (int64_t i : {0, 100, 230}) {
    at::Tensor y = x.clone();
    y.view({-1})[i] = std::nextafter(y.view({-1})[i].item<float>(), 1e9f);  // one ulp
    EXPECT_NE(d, kb::tensorDigest(y)) << "element " << i;
  }
  // Two swapped elements change it (positions are mixed in).
  at::Tensor s = x.clone().view({-1});
  at::Tensor tmp = s[0].clone();
  s[0] = s[1];
  s[1] = tmp;
  EXPECT_NE(d, kb::tensorDigest(s.view({7, 33})));
  // Same bytes, another dtype; an odd byte count; empty tensors.
  EXPECT_NE(kb::tensorDigest(at::zeros({4}, at::kFloat)), kb::tensorDigest(at::zeros({4}, at::kInt)));
  EXPECT_NE(kb::tensorDigest(at::zeros({3}, at::kByte)), kb::tensorDigest(at::ones({3}, at::kByte)));
  EXPECT_EQ(kb::tensorDigest(at::empty({0})), kb::tensorDigest(at::empty({0})));
  // A non-contiguous view digests its values, as a contiguous copy would.
  at::Tensor m = at::randn({5, 6});
  EXPECT_EQ(kb::tensorDigest(m.t()), kb::tensorDigest(m.t().contiguous()));
  EXPECT_EQ(kb::digestHex(0xabcULL), "0000000000000abc");
}

}  // namespace
