// Inputs beyond the generator (task.h applyDomainDraw, bundle.h
// isDomainSeed): a domain seed's inputs are get_inputs' draw of its
// generator seed moved into the operator's domain, the same for the same
// seed on every input maker (Task::makeInputs, CallInputs::make, prefetched
// or not), different from the generator's; a few-valued tensor becomes
// many-valued with its signs kept; integer, bool tensors and scalars are
// untouched; views keep their relation.
#include "task/timed_call.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>

namespace {

using kb::task::domainSeed;

std::filesystem::path task(const char* name) {
  const char* root = std::getenv("KB_SOURCE_ROOT");
  return std::filesystem::path(root ? root : ".") / "testdata/tasks" / name;
}

const c10::Device kCpu(c10::kCPU);

int64_t distinct(const at::Tensor& t) { return std::get<0>(at::_unique(t.flatten())).numel(); }

TEST(DomainDraw, FewValuedInputBecomesContinuousOnEveryMaker) {
  kb::task::Task t = kb::task::Task::open(task("few_values"));
  ASSERT_EQ(t.info().generator, "scripted");
  kb::task::CallInputs maker(t, kCpu);
  for (uint64_t seed : {0ull, 1ull, 2ull}) {
    SCOPED_TRACE(seed);
    at::Tensor g = t.makeInputs(seed, kCpu)[0].toTensor();
    EXPECT_LE(distinct(g), 3);  // get_inputs' own draw: {0, 1, 2}
    at::Tensor d = t.makeInputs(domainSeed(seed), kCpu)[0].toTensor();
    EXPECT_EQ(d.sizes(), g.sizes());
    EXPECT_EQ(d.scalar_type(), g.scalar_type());
    EXPECT_GT(distinct(d), 1000) << "continuous over the range, not three values";
    EXPECT_GE(d.min().item<double>(), 0.0) << "the sign of [0, 2] is kept";
    EXPECT_LE(d.max().item<double>(), 2.0 * 8.0);
    EXPECT_TRUE(at::equal(d, t.makeInputs(domainSeed(seed), kCpu)[0].toTensor())) << "same seed, same values";
    EXPECT_TRUE(at::equal(d, maker.make(domainSeed(seed))[0].toTensor())) << "CallInputs makes the same";
    EXPECT_TRUE(at::equal(g, maker.make(seed)[0].toTensor())) << "a generator seed is get_inputs' draw";
  }
  EXPECT_FALSE(at::equal(t.makeInputs(domainSeed(0), kCpu)[0].toTensor(),
                         t.makeInputs(domainSeed(1), kCpu)[0].toTensor()));
}

TEST(DomainDraw, PrefetchedSetsAreTheSame) {
  kb::task::Task fresh = kb::task::Task::open(task("few_values"));
  kb::task::Task ahead = kb::task::Task::open(task("few_values"));
  std::vector<uint64_t> seeds = kb::task::verificationSeeds(ahead.info());
  ASSERT_EQ(seeds.size(), 6u);
  EXPECT_EQ(ahead.prefetchInputs(seeds), seeds.size());
  for (uint64_t seed : seeds)
    EXPECT_TRUE(at::equal(ahead.makeInputs(seed, kCpu)[0].toTensor(), fresh.makeInputs(seed, kCpu)[0].toTensor()))
        << "seed " << seed << ": transformed once, whether prefetched or not";
}

TEST(DomainDraw, SpecInputRescaledByAPositiveFactor) {
  kb::task::Task t = kb::task::Task::open(task("linear_relu"));
  ASSERT_EQ(t.info().generator, "spec");
  kb::task::CallInputs maker(t, kCpu);
  std::vector<double> factors;
  for (uint64_t seed : {0ull, 1ull, 2ull}) {
    at::Tensor g = t.makeInputs(seed, kCpu)[0].toTensor();
    at::Tensor d = t.makeInputs(domainSeed(seed), kCpu)[0].toTensor();
    EXPECT_FALSE(at::equal(g, d));
    EXPECT_TRUE(at::equal(d, maker.make(domainSeed(seed))[0].toTensor()));
    // Continuous already: only rescaled, by one factor in [1/8, 8].
    double f = (d.abs().sum() / g.abs().sum()).item<double>();
    EXPECT_GE(f, 0.125 * 0.999);
    EXPECT_LE(f, 8.0 * 1.001);
    EXPECT_TRUE(at::allclose(d, g * f, 1e-5, 1e-6));
    factors.push_back(f);
  }
  EXPECT_NE(factors[0], factors[1]);
}

TEST(DomainDraw, ScriptedStructureKept) {
  kb::task::Task t = kb::task::Task::open(task("symmetric_matmul"));
  for (uint64_t seed : {domainSeed(0), domainSeed(5)}) {
    auto x = t.makeInputs(seed, kCpu);
    at::Tensor A = x[0].toTensor();
    EXPECT_TRUE(at::equal(A, A.t())) << "a rescaled symmetric matrix is symmetric";
  }
}

TEST(DomainDraw, OnlyFloatingTensorsChange) {
  auto opts = at::TensorOptions().dtype(at::kFloat);
  at::Tensor few = at::randint(0, 3, {512}, at::TensorOptions().dtype(at::kLong)).to(at::kFloat);
  at::Tensor idx = at::randint(0, 3, {512}, at::TensorOptions().dtype(at::kLong));
  at::Tensor mask = at::rand({64}) > 0.5;
  at::Tensor ones = at::ones({100}, opts) * 0.5;
  at::Tensor zeros = at::zeros({100}, opts);
  at::Tensor neg = at::full({100}, -2.0, opts);
  at::Tensor half = at::randn({256}, at::TensorOptions().dtype(at::kHalf));
  std::vector<c10::IValue> made = {few.clone(), idx.clone(), mask.clone(), c10::IValue(int64_t{7}),
                                   c10::IValue(2.5), ones.clone(), zeros.clone(), neg.clone(), half.clone()};
  std::vector<c10::IValue> same = made;
  kb::task::applyDomainDraw(same, 1234, true);  // a generator seed: nothing changes
  EXPECT_TRUE(at::equal(same[0].toTensor(), few));
  std::vector<c10::IValue> v = made;
  kb::task::applyDomainDraw(v, domainSeed(1234), true);
  EXPECT_GT(distinct(v[0].toTensor()), 400);
  EXPECT_GE(v[0].toTensor().min().item<double>(), 0.0);
  EXPECT_TRUE(at::equal(v[1].toTensor(), idx)) << "integer tensors are indices or sizes: untouched";
  EXPECT_TRUE(at::equal(v[2].toTensor(), mask)) << "bool tensors: untouched";
  EXPECT_EQ(v[3].toInt(), 7);
  // A float scalar moves by 2^u, u in [-1, 1]; not where the reference has it fixed.
  EXPECT_NE(v[4].toDouble(), 2.5);
  EXPECT_GE(v[4].toDouble(), 1.25);
  EXPECT_LE(v[4].toDouble(), 5.0);
  std::vector<c10::IValue> fixed = {few.clone(), idx.clone(), mask.clone(), c10::IValue(int64_t{7}), c10::IValue(2.5)};
  kb::task::applyDomainDraw(fixed, domainSeed(1234), false);
  EXPECT_EQ(fixed[4].toDouble(), 2.5);
  // Constants: continuous around them, their sign kept (zeros: [-1, 1]).
  EXPECT_GT(distinct(v[5].toTensor()), 50);
  EXPECT_GT(v[5].toTensor().min().item<double>(), 0.0);
  EXPECT_GT(distinct(v[6].toTensor()), 50);
  EXPECT_LT(v[7].toTensor().max().item<double>(), 0.0);
  // float16 is scaled up by 2 at most (its range ends at 65504).
  double f = (v[8].toTensor().to(at::kFloat).abs().sum() / half.to(at::kFloat).abs().sum()).item<double>();
  EXPECT_LE(f, 2.0 * 1.01);
  EXPECT_GE(f, 0.125 * 0.99);
  // The same seed on fresh tensors: the same values.
  std::vector<c10::IValue> w = {few.clone(), idx.clone(), mask.clone(), c10::IValue(int64_t{7}),
                                c10::IValue(2.5), ones.clone(), zeros.clone(), neg.clone(), half.clone()};
  kb::task::applyDomainDraw(w, domainSeed(1234), true);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].isTensor()) {
      EXPECT_TRUE(at::equal(v[i].toTensor(), w[i].toTensor())) << "input " << i;
    }
  EXPECT_EQ(v[4].toDouble(), w[4].toDouble());
}

TEST(DomainDraw, ViewsKeepTheirRelation) {
  // An expanded row (overlapping memory) and a tensor with its transpose:
  // each storage is transformed once, so the inputs stay views of one another.
  at::Tensor row = at::randint(0, 2, {1, 64}).to(at::kFloat);
  at::Tensor x = at::randn({32, 48});
  std::vector<c10::IValue> v = {row.expand({16, 64}), x, x.t()};
  kb::task::applyDomainDraw(v, domainSeed(3), true);
  at::Tensor e = v[0].toTensor();
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(e.stride(0), 0);
  EXPECT_TRUE(at::equal(e[0], e[15]));
  EXPECT_GT(distinct(e[0]), 32) << "the 0/1 row became continuous";
  EXPECT_TRUE(at::equal(v[1].toTensor().t(), v[2].toTensor()));
}

}  // namespace
