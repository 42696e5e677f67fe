// The inputs and output digests of timed calls (task/timed_call.h): the
// same seed gives the same values and no two seeds share them; a scripted
// get_inputs keeps its structure; a digest sees every byte. And the
// inliner lib/task runs over scripted graphs reaches nested calls.
#include "task/timed_call.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>

#include "task/jit_inline.h"

#include <cstdlib>
#include <set>

namespace {

std::filesystem::path task(const char* name) {
  const char* root = std::getenv("KB_SOURCE_ROOT");
  return std::filesystem::path(root ? root : ".") / "testdata/tasks" / name;
}

const c10::Device kCpu(c10::kCPU);

TEST(CallInputs, SpecSameSeedSameValuesOtherSeedOthers) {
  kb::task::Task t = kb::task::Task::open(task("linear_relu"));
  ASSERT_EQ(t.info().generator, "spec");
  kb::task::CallInputs maker(t, kCpu);
  EXPECT_EQ(maker.method(), "spec");
  auto a = maker.make(123), b = maker.make(123), c = maker.make(124);
  ASSERT_EQ(a.size(), t.info().inputs.size());
  EXPECT_TRUE(at::equal(a[0].toTensor(), b[0].toTensor()));
  EXPECT_FALSE(at::equal(a[0].toTensor(), c[0].toTensor()));
  // Drawn from the recorded distribution: a standard normal's moments.
  at::Tensor big = at::cat({maker.make(1)[0].toTensor().flatten(), maker.make(2)[0].toTensor().flatten()});
  EXPECT_NEAR(big.mean().item<double>(), t.info().inputs[0].a, 0.2);
}

TEST(CallInputs, ScriptedRunsGetInputsFreshPerSeedKeepingItsStructure) {
  kb::task::Task t = kb::task::Task::open(task("symmetric_matmul"));
  ASSERT_EQ(t.info().generator, "scripted");
  kb::task::CallInputs maker(t, kCpu);
  EXPECT_EQ(maker.method(), "scripted");
  std::vector<at::Tensor> firsts;
  for (uint64_t seed : {7ull, 8ull, 9ull, 1ull << 40}) {
    auto x = maker.make(seed);
    ASSERT_EQ(x.size(), 2u);
    at::Tensor A = x[0].toTensor(), B = x[1].toTensor();
    EXPECT_EQ(A.sizes(), (std::vector<int64_t>{64, 64}));
    EXPECT_TRUE(at::equal(A, A.t())) << "get_inputs' symmetry is kept, seed " << seed;
    EXPECT_TRUE(at::equal(A, maker.make(seed)[0].toTensor())) << "same seed, same values";
    // On the CPU the program is the one Task::makeInputs runs: same values.
    EXPECT_TRUE(at::equal(B, t.makeInputs(seed, kCpu)[1].toTensor()));
    firsts.push_back(A);
  }
  // No call's values are an affine mix of two others' (what a result cache
  // on an affine task could exploit): x3 - x2 is not c * (x1 - x2).
  at::Tensor d1 = (firsts[0] - firsts[1]).flatten(), d3 = (firsts[2] - firsts[1]).flatten();
  double c = (d3 * d1).sum().item<double>() / (d1 * d1).sum().item<double>();
  EXPECT_GT((d3 - c * d1).abs().max().item<double>(), 0.5);
  EXPECT_FALSE(at::equal(firsts[2], firsts[3]));
}

TEST(TensorDigest, SeesEveryByteAndTheDtype) {
  at::Tensor x = at::randn({7, 33});
  uint64_t d = kb::task::tensorDigest(x);
  EXPECT_EQ(d, kb::task::tensorDigest(x.clone()));
  for (int64_t i : {0, 100, 230}) {
    at::Tensor y = x.clone();
    y.view({-1})[i] = std::nextafter(y.view({-1})[i].item<float>(), 1e9f);  // one ulp
    EXPECT_NE(d, kb::task::tensorDigest(y)) << "element " << i;
  }
  // Two swapped elements change it (positions are mixed in).
  at::Tensor s = x.clone().view({-1});
  at::Tensor tmp = s[0].clone();
  s[0] = s[1];
  s[1] = tmp;
  EXPECT_NE(d, kb::task::tensorDigest(s.view({7, 33})));
  // Same bytes, another dtype; an odd byte count; empty tensors.
  EXPECT_NE(kb::task::tensorDigest(at::zeros({4}, at::kFloat)), kb::task::tensorDigest(at::zeros({4}, at::kInt)));
  EXPECT_NE(kb::task::tensorDigest(at::zeros({3}, at::kByte)), kb::task::tensorDigest(at::ones({3}, at::kByte)));
  EXPECT_EQ(kb::task::tensorDigest(at::empty({0})), kb::task::tensorDigest(at::empty({0})));
  // A non-contiguous view digests its values, as a contiguous copy would.
  at::Tensor m = at::randn({5, 6});
  EXPECT_EQ(kb::task::tensorDigest(m.t()), kb::task::tensorDigest(m.t().contiguous()));
  EXPECT_EQ(kb::task::digestHex(0xabcULL), "0000000000000abc");
}

// Reference::opKinds and the scripted input generator see the whole call
// tree, with the graph executor's optimizations off as lib/task runs them
// (one torch::jit::Inline pass stopped one level down: KernelBench
// level3/1_MLP, forward -> nn.Sequential -> nn.Linear, showed no aten::linear).
TEST(InlineAllCalls, ReachesModulesNestedTwoDeepAndFunctions) {
  torch::jit::setGraphExecutorOptimize(false);
  torch::jit::Module leaf("Leaf");
  leaf.define("def forward(self, x):\n    return torch.relu(x)\n");
  torch::jit::Module mid("Mid");
  mid.register_module("leaf", leaf);
  mid.define("def forward(self, x):\n    return self.leaf.forward(x)\n");
  torch::jit::Module top("Top");
  top.register_module("mid", mid);
  top.define("def forward(self, x):\n    return self.mid.forward(x) + 1\n");
  auto kinds = [](torch::jit::Graph& g) {
    std::set<std::string> k;
    for (torch::jit::Node* n : g.nodes()) k.insert(n->kind().toQualString());
    return k;
  };
  std::shared_ptr<torch::jit::Graph> once = top.get_method("forward").graph()->copy();
  torch::jit::Inline(*once);
  EXPECT_TRUE(kinds(*once).count("prim::CallMethod"));  // what one pass leaves
  std::shared_ptr<torch::jit::Graph> all = top.get_method("forward").graph()->copy();
  kb::task::inlineAllCalls(*all);
  std::set<std::string> k = kinds(*all);
  EXPECT_TRUE(k.count("aten::relu"));
  EXPECT_TRUE(k.count("aten::add"));
  EXPECT_FALSE(k.count("prim::CallMethod"));
  EXPECT_FALSE(k.count("prim::CallFunction"));
}

}  // namespace
