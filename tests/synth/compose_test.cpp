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
  EXPECT_EQ(opCountFor(paper, 7, 42), opCountFor(paper, 7, 42));
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
  Mix mix;
  Profile p = Profile::byName("tiny");
  auto a = composeRule(catalog(), p, mix, 11, 5), b = composeRule(catalog(), p, mix, 11, 5);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.code, b.code);
  EXPECT_EQ(a.json(), b.json());
  std::set<std::string> codes;
  for (int i = 0; i < 50; ++i) codes.insert(composeRule(catalog(), p, mix, 11, i).code);
  EXPECT_GT(codes.size(), 45u);
  EXPECT_NE(composeRule(catalog(), p, mix, 12, 5).code, a.code);
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
  Rng r(1, 2, 3);
  Rng s(1, 2, 3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.next(), s.next());
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafULL);  // SplitMix64's first output for seed 0
}
