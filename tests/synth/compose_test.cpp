// Unit tests of lib/synth's rule-based composer: catalog, mix, shape rules,
// determinism, size limits, the Python it writes.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/error.h"
#include "synth/compose.h"
#include "synth/ops.h"
#include "synth/rng.h"

using namespace kb::synth;

namespace {

const Catalog& catalog() {
  static Catalog c = loadCatalog(defaultCatalogPath());
  return c;
}

const SeedOp& op(const std::string& name) {
  for (const auto& o : catalog().ops)
    if (o.name == name) return o;
  throw std::runtime_error("no composable op " + name);
}

Step apply(const std::string& name, const Shape& in, kb::Json args, kb::Json params = kb::Json::object()) {
  Step s;
  s.op = &op(name);
  s.params = params;
  s.params["args"] = args;
  EXPECT_TRUE(inferStep(s, in)) << name;
  return s;
}

}  // namespace

TEST(Catalog, CrawledTorchAndTransformersWithExclusions) {
  const Catalog& c = catalog();
  EXPECT_GT(c.entries.size(), 1000u);
  EXPECT_GT(c.ops.size(), 120u);
  EXPECT_GE(c.transformers.size(), 10u);
  std::map<std::string, kb::Json> by_name;
  for (const auto& e : c.entries) by_name[e["name"]] = e;
  for (const char* n : {"torch.nn.Dropout", "torch.nn.functional.dropout", "torch.rand", "torch.randn_like",
                        "torch.bernoulli", "torch.nn.RReLU", "torch.nn.functional.gumbel_softmax", "torch.empty"}) {
    ASSERT_TRUE(by_name.count(n)) << n;
    EXPECT_EQ(by_name[n]["status"], "excluded") << n;
    EXPECT_FALSE(by_name[n].value("reason", "").empty()) << n;
  }
  EXPECT_NE(by_name["torch.nn.Dropout"]["reason"].get<std::string>().find("stochastic"), std::string::npos);
  for (const auto& o : c.ops) {
    EXPECT_EQ(o.name.find("ropout"), std::string::npos) << o.name;
    EXPECT_FALSE(o.ranks.empty()) << o.name;
  }
  for (const auto& o : c.transformers) {
    EXPECT_FALSE(o.entry.value("module_source", "").empty()) << o.name;
    EXPECT_EQ(o.entry.value("module_source", "").find("import transformers"), std::string::npos) << o.name;
  }
}

TEST(Catalog, BadFilesAreUsageErrors) {
  EXPECT_THROW(loadCatalog("/nonexistent/seeds.json"), kb::UsageError);
}

TEST(Mix, ParseAndDefaults) {
  Mix paper;
  EXPECT_NEAR(paper.json()["2"].get<double>(), 0.838, 1e-9);
  EXPECT_NEAR(paper.json()["transformers"].get<double>(), 0.012, 1e-9);
  Mix m = Mix::parse("1:1,3:3");
  EXPECT_NEAR(m.json()["3"].get<double>(), 0.75, 1e-9);
  EXPECT_EQ(m.w[1], 0.0);
  EXPECT_THROW(Mix::parse("6:1"), kb::UsageError);
  EXPECT_THROW(Mix::parse("2:x"), kb::UsageError);
  EXPECT_THROW(Mix::parse("2:0"), kb::UsageError);
  EXPECT_THROW(Mix::parse("two"), kb::UsageError);
}

TEST(Mix, OpCountsFollowTheMixForEveryPrefix) {
  Mix paper;
  for (int n : {100, 300, 6000}) {
    std::map<int, int> count;
    for (int i = 0; i < n; ++i) ++count[opCountFor(paper, 7, i)];
    double total = 0;
    for (double w : paper.w) total += w;
    for (int k = 1; k <= 5; ++k) EXPECT_NEAR(count[k], n * paper.w[k - 1] / total, 2.0 + 0.002 * n) << k << " of " << n;
    EXPECT_NEAR(count[0], n * paper.w[5] / total, 2.0 + 0.002 * n) << "transformers of " << n;
  }
}

// The op-count sequence is part of what --seed reproduces: pinned to values
// computed outside this code (a Python transcription of SplitMix64 and the
// Weyl sequence of compose.cpp), not compared with another call of itself.
TEST(Mix, OpCountsArePinnedForASeed) {
  Mix paper;
  const std::vector<int> want = {1, 2, 2, 2, 2, 2, 2, 2, 4, 2, 2, 2, 2, 2, 2, 2, 3, 2, 2, 2,
                                 2, 5, 2, 2, 2, 2, 2, 2, 2, 3, 2, 2, 2, 2, 1, 2, 2, 3, 2, 2};
  std::vector<int> got;
  for (uint64_t i = 0; i < want.size(); ++i) got.push_back(opCountFor(paper, 7, i));
  EXPECT_EQ(got, want);
  // Out of order and after other seeds: no hidden state.
  EXPECT_EQ(opCountFor(paper, 8, 0), opCountFor(Mix::parse("paper"), 8, 0));
  EXPECT_EQ(opCountFor(paper, 7, 21), 5);
  EXPECT_EQ(opCountFor(paper, 7, 8), 4);
  EXPECT_EQ(opCountFor(paper, 7, 0), 1);
}

TEST(Rules, ConvPoolNormShapes) {
  auto c = apply("torch.nn.Conv2d", {2, 3, 16, 16}, {{"kernel_size", 3}, {"stride", 2}, {"padding", 1}, {"bias", true}},
                 {{"out_channels", 8}});
  EXPECT_EQ(c.out, (Shape{2, 8, 8, 8}));
  auto t = apply("torch.nn.ConvTranspose1d", {2, 4, 10}, {{"kernel_size", 3}, {"stride", 2}, {"padding", 1}, {"bias", false}},
                 {{"out_channels", 6}});
  EXPECT_EQ(t.out, (Shape{2, 6, 19}));  // (10-1)*2 - 2 + 3
  auto p = apply("torch.nn.MaxPool3d", {2, 4, 7, 8, 9}, {{"kernel_size", 2}, {"stride", 2}});
  EXPECT_EQ(p.out, (Shape{2, 4, 3, 4, 4}));
  auto r = apply("torch.sum", {2, 5, 7}, {{"keepdim", false}}, {{"dim", 1}});
  EXPECT_EQ(r.out, (Shape{2, 7}));
  auto g = apply("torch.nn.GLU", {2, 5, 8}, kb::Json::object());
  EXPECT_EQ(g.out, (Shape{2, 5, 4}));
  auto ps = apply("torch.nn.PixelShuffle", {2, 8, 3, 3}, {{"upscale_factor", 2}});
  EXPECT_EQ(ps.out, (Shape{2, 2, 6, 6}));
  auto l = apply("torch.nn.functional.mse_loss", {2, 3}, kb::Json::object());
  EXPECT_TRUE(l.out.empty());
  ASSERT_EQ(l.extra_inputs.size(), 1u);
  // A kernel larger than the padded input does not fit.
  Step bad;
  bad.op = &op("torch.nn.Conv1d");
  bad.params = {{"out_channels", 4}, {"args", {{"kernel_size", 5}, {"stride", 1}, {"padding", 0}}}};
  EXPECT_FALSE(inferStep(bad, {2, 3, 4}));
  // GroupNorm needs a group count dividing the channels.
  Step gn;
  gn.op = &op("torch.nn.GroupNorm");
  gn.params = {{"args", {{"num_groups", 4}}}};
  EXPECT_FALSE(inferStep(gn, {2, 6, 5}));
}

TEST(Compose, DeterministicPerIndexAndSeed) {
  // Two independent runs: a catalog loaded separately (other addresses), a
  // profile and mix built separately, the tasks composed in opposite orders
  // with other seeds in between. A task must depend only on (seed, index).
  Profile p = Profile::byName("tiny");
  Mix mix;
  std::vector<Composed> forward;
  for (int i = 0; i < 20; ++i) forward.push_back(composeRule(catalog(), p, mix, 11, i));

  Catalog other = loadCatalog(defaultCatalogPath());
  Profile p2 = Profile::byName("tiny");
  Mix mix2 = Mix::parse("paper");
  std::vector<Composed> backward(20);
  for (int i = 19; i >= 0; --i) {
    composeRule(other, p2, mix2, 99, i);  // unrelated work in between
    backward[i] = composeRule(other, p2, mix2, 11, i);
  }
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(forward[i].ok) << i << ": " << forward[i].error;
    EXPECT_EQ(forward[i].code, backward[i].code) << i;
    EXPECT_EQ(forward[i].json(), backward[i].json()) << i;
    if (int n = opCountFor(mix, 11, i); n > 0) EXPECT_EQ(forward[i].op_count, n) << i;  // the mix decides the count
    else EXPECT_EQ(forward[i].category, "transformers") << i;
  }
  std::set<std::string> codes;
  for (int i = 0; i < 50; ++i) codes.insert(composeRule(catalog(), p, mix, 11, i).code);
  EXPECT_GT(codes.size(), 45u);
  // Another seed gives other tasks (most of them: an index may repeat a chain).
  int same = 0;
  for (int i = 0; i < 20; ++i) same += composeRule(catalog(), p, mix, 12, i).code == forward[i].code;
  EXPECT_LT(same, 3);
}

TEST(Compose, EveryTaskFitsItsProfile) {
  Mix mix;
  for (const char* name : {"tiny", "gpu"}) {
    Profile p = Profile::byName(name);
    std::map<std::string, int> rules;
    for (int i = 0; i < 600; ++i) {
      Composed c = composeRule(catalog(), p, mix, 3, i);
      ASSERT_TRUE(c.ok) << name << " " << i << ": " << c.error;
      ASSERT_FALSE(c.steps.empty());
      EXPECT_EQ(c.output, c.steps.back().out);
      for (size_t k = 1; k < c.steps.size(); ++k) EXPECT_EQ(c.steps[k].in, c.steps[k - 1].out) << i;
      if (c.category != "transformers") {
        EXPECT_EQ(static_cast<int>(c.steps.size()), c.op_count);
        EXPECT_LE(c.total_elements, p.max_total_elements) << i;
        for (size_t k = 0; k + 1 < c.steps.size(); ++k) EXPECT_FALSE(c.steps[k].op->terminal) << i;
      }
      for (const auto& s : c.steps) ++rules[s.op->rule];
      for (const char* need : {"class Model(nn.Module):", "def forward(self, x", "def get_inputs():",
                               "def get_init_inputs():", "return x"})
        EXPECT_NE(c.code.find(need), std::string::npos) << i << " lacks " << need << "\n" << c.code;
    }
    EXPECT_GE(rules.size(), 18u) << name;  // the chains use most shape rules
  }
}

TEST(Compose, GpuProfileAimsAtMilliseconds) {
  Mix mix;
  Profile p = Profile::byName("gpu");
  std::vector<double> est;
  for (int i = 0; i < 300; ++i) est.push_back(composeRule(catalog(), p, mix, 1, i).est_ms);
  std::sort(est.begin(), est.end());
  EXPECT_GT(est[est.size() / 2], 1.0);   // median estimate above 1 ms
  EXPECT_LT(est.back(), 100.0);
}

TEST(Compose, TransformersTasksAreStandalone) {
  Mix m = Mix::parse("transformers:1");
  Composed c = composeRule(catalog(), Profile::byName("tiny"), m, 2, 0);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.category, "transformers");
  EXPECT_EQ(c.code.find("import transformers"), std::string::npos);
  EXPECT_EQ(c.code.find("from transformers"), std::string::npos);
  EXPECT_NE(c.code.find("self.block = "), std::string::npos);
}

TEST(Python, Literals) {
  EXPECT_EQ(pyLiteral(kb::Json(true)), "True");
  EXPECT_EQ(pyLiteral(kb::Json(2.0)), "2.0");
  EXPECT_EQ(pyLiteral(kb::Json(0.125)), "0.125");
  EXPECT_EQ(pyLiteral(kb::Json("tanh")), "\"tanh\"");
  EXPECT_EQ(pyLiteral(kb::Json::array({4})), "(4,)");
  EXPECT_EQ(pyName("torch.nn.functional.gelu"), "F.gelu");
  EXPECT_EQ(pyName("torch.nn.Conv2d"), "nn.Conv2d");
  EXPECT_EQ(pyName("torch.relu"), "torch.relu");
}

TEST(Rng, PortableSequence) {
  // Expected values from a separate Python transcription of SplitMix64 (the
  // first is the published SplitMix64 output for seed 0), so a change of the
  // generator shows here rather than as a silently different task set.
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafULL);
  Rng r(1, 2, 3);
  EXPECT_EQ(r.next(), 0x175b428fc1240934ULL);
  EXPECT_EQ(r.next(), 0x9cc3d648f51882f5ULL);
  EXPECT_EQ(r.next(), 0xda05cba0960f5d27ULL);
  Rng s(5);
  EXPECT_EQ(s.next(), 0xc097314d939736f8ULL);
  EXPECT_EQ(s.next(), 0x3b92d3f0106bc147ULL);
  EXPECT_EQ(s.next(), 0x196e4ec2da05b945ULL);
  // Streams of neighbouring (a, b) differ.
  EXPECT_NE(Rng(1, 2, 3).next(), Rng(1, 2, 4).next());
  EXPECT_NE(Rng(1, 2, 3).next(), Rng(1, 3, 3).next());
}
