// The LibTorch model against transformers' outputs (fixtures made by
// scripts/fixtures/make_policy_fixtures.py), generation, sampling and checkpoints.
// Tests named Gpu* run on CUDA; the 'gpu' suite runs only them and exits 77
// (skipped) where there is no GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/json.h"
#include "kb_config.h"
#include "llm/model.h"
#include "llm/policy.h"
#include "llm/safetensors.h"
#include "llm/sampler.h"

namespace fs = std::filesystem;
using namespace kb::llm;

namespace {

const fs::path kData = fs::path(KB_SOURCE_ROOT) / "testdata" / "policy";

bool haveGpu() { return at::hasCUDA() && at::getNumGPUs() > 0; }

// The gpu suite sets KB_REQUIRE_GPU: without a GPU the binary exits 77 so
// meson reports a skip, not a pass.
struct GpuGate : ::testing::Environment {
  void SetUp() override {
    if (std::getenv("KB_REQUIRE_GPU") && !haveGpu()) {
      std::printf("no CUDA device: skipping the gpu suite\n");
      std::exit(77);
    }
  }
};
const auto* gpu_gate = ::testing::AddGlobalTestEnvironment(new GpuGate);

std::map<std::string, at::Tensor> expectedTensors(const std::string& model) {
  std::map<std::string, at::Tensor> out;
  for (auto& [name, t] : readTensors(kData / model / "expected.safetensors")) out[name] = t;
  return out;
}

// Largest |ours - reference| over the real (unpadded) positions.
double maxLogitDiff(const Model& model, const std::string& fixture) {
  auto e = expectedTensors(fixture);
  at::Tensor logits = model.forward(e["input_ids"], e["attention_mask"]).to(at::kCPU, at::kFloat);
  at::Tensor real = e["attention_mask"].to(at::kBool).unsqueeze(-1);
  EXPECT_EQ(logits.sizes(), e["logits"].sizes());
  return (logits - e["logits"]).abs().masked_fill(real.logical_not(), 0).max().item<double>();
}

struct GreedyCase {
  std::vector<int32_t> prompt, tokens;
  std::vector<float> logprobs;
};

std::vector<GreedyCase> greedyCases(const std::string& fixture) {
  kb::Json j = kb::readJsonFile(kData / fixture / "greedy.json");
  std::vector<GreedyCase> out;
  for (const auto& c : j["cases"])
    out.push_back({c["prompt"].get<std::vector<int32_t>>(), c["tokens"].get<std::vector<int32_t>>(),
                   c["logprobs"].get<std::vector<float>>()});
  return out;
}

// All prompts in one padded batch; each must produce transformers' 64 greedy
// tokens (made one prompt at a time, without padding).
void expectGreedyParity(const Model& model, const std::string& fixture) {
  auto cases = greedyCases(fixture);
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& c : cases) prompts.push_back(c.prompt);
  kb::chat::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 64;
  at::Generator gen = makeGenerator(model.device(), 0);
  auto out = generateBatch(model, prompts, p, gen);
  ASSERT_EQ(out.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(out[i].token_ids, cases[i].tokens) << fixture << " prompt " << i;
    EXPECT_EQ(out[i].finish_reason, "length");
    ASSERT_EQ(out[i].logprobs.size(), cases[i].logprobs.size());
    for (size_t k = 0; k < out[i].logprobs.size(); ++k)
      EXPECT_NEAR(out[i].logprobs[k], cases[i].logprobs[k], 1e-4) << fixture << " prompt " << i << " step " << k;
  }
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kb_policy_model_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(Model, Qwen2LogitsMatchTransformersOnAPaddedBatch) {
  Model m = loadModel(kData / "qwen2-tiny", {"cpu", "float32"});
  EXPECT_TRUE(m.unused_tensors.empty());
  EXPECT_TRUE(m.lm_head.is_same(m.embed_tokens));  // tied
  double diff = maxLogitDiff(m, "qwen2-tiny");
  std::printf("qwen2-tiny fp32 max |logit diff| = %.3g\n", diff);
  EXPECT_LT(diff, 1e-4);
  // The logits are not trivially small (weights scaled in the fixture script).
  EXPECT_GT(expectedTensors("qwen2-tiny")["logits"].abs().max().item<double>(), 2.0);
  m.use_sdpa = false;  // the explicit attention math gives the same
  double math_diff = maxLogitDiff(m, "qwen2-tiny");
  std::printf("qwen2-tiny fp32 (attention math path) max |logit diff| = %.3g\n", math_diff);
  EXPECT_LT(math_diff, 1e-4);
}

TEST(Model, LlamaWithRopeScalingAndBiasMatchesTransformers) {
  Model m = loadModel(kData / "llama-tiny", {"cpu", "float32"});  // bf16 checkpoint read into fp32
  EXPECT_FALSE(m.lm_head.is_same(m.embed_tokens));
  double diff = maxLogitDiff(m, "llama-tiny");
  std::printf("llama-tiny fp32 max |logit diff| = %.3g\n", diff);
  EXPECT_LT(diff, 1e-4);
}

TEST(Model, HalfPrecisionStaysClose) {
  for (const char* dtype : {"bfloat16", "float16"}) {
    Model m = loadModel(kData / "qwen2-tiny", {"cpu", dtype});
    EXPECT_EQ(torchDtypeName(m.dtype()), dtype);
    double diff = maxLogitDiff(m, "qwen2-tiny");
    std::printf("qwen2-tiny %s max |logit diff| = %.3g\n", dtype, diff);
    EXPECT_LT(diff, 0.5) << dtype;  // bf16 keeps ~3 digits; logits reach ~6
  }
  Model auto_dtype = loadModel(kData / "llama-tiny");  // "auto": the config's bfloat16
  EXPECT_EQ(auto_dtype.dtype(), at::kBFloat16);
}

TEST(Model, KVCacheDecodingEqualsFullForward) {
  Model m = loadModel(kData / "qwen2-tiny", {"cpu", "float32"});
  auto e = expectedTensors("qwen2-tiny");
  at::Tensor ids = e["input_ids"], mask = e["attention_mask"];
  const int64_t T = ids.size(1);
  // Rows 0 and 1 are left-padded: feed 5 tokens, then one at a time.
  at::Tensor rows = ids.narrow(0, 0, 2), rmask = mask.narrow(0, 0, 2);
  at::Tensor full = m.forward(rows, rmask);
  KVCache cache = m.newCache(2, T);
  at::Tensor first = m.forward(rows.narrow(1, 0, 5), rmask.narrow(1, 0, 5), &cache);
  double diff = (first - full.narrow(1, 0, 5)).abs().masked_fill(rmask.narrow(1, 0, 5).unsqueeze(-1) == 0, 0)
                    .max().item<double>();
  for (int64_t t = 5; t < T; ++t) {
    at::Tensor step = m.forward(rows.narrow(1, t, 1), rmask.narrow(1, t, 1), &cache, /*last_only=*/true);
    diff = std::max(diff, (step - full.select(1, t)).abs().max().item<double>());
  }
  EXPECT_LT(diff, 1e-4);
  EXPECT_EQ(cache.length, T);
  EXPECT_THROW(m.forward(rows.narrow(1, 0, 1), rmask.narrow(1, 0, 1), &cache), kb::Error);  // full
}

TEST(Model, GreedyGenerationMatchesTransformersFor64Steps) {
  expectGreedyParity(loadModel(kData / "qwen2-tiny", {"cpu", "float32"}), "qwen2-tiny");
  expectGreedyParity(loadModel(kData / "llama-tiny", {"cpu", "float32"}), "llama-tiny");
}

TEST(Model, TokenLogprobsAreLogSoftmaxOfTheNextToken) {
  Model m = loadModel(kData / "qwen2-tiny", {"cpu", "float32"});
  at::Tensor ids = at::tensor({3, 17, 250, 9, 41}, at::kLong).unsqueeze(0);
  at::Tensor lp = tokenLogprobs(m, ids);
  at::Tensor logits = m.forward(ids);
  ASSERT_EQ(lp.sizes(), (std::vector<int64_t>{1, 4}));
  for (int64_t t = 0; t < 4; ++t)
    EXPECT_NEAR(lp[0][t].item<float>(),
                at::log_softmax(logits[0][t], -1)[ids[0][t + 1].item<int64_t>()].item<float>(), 1e-5);
}

TEST(Model, ParametersCarryCheckpointNamesAndTrain) {
  Model m = loadModel(kData / "qwen2-tiny", {"cpu", "float32"});
  auto named = m.namedParameters();
  EXPECT_EQ(named.front().first, "model.embed_tokens.weight");
  EXPECT_EQ(named.back().first, "model.norm.weight");  // lm_head tied: not listed
  Checkpoint ckpt(kData / "qwen2-tiny");
  EXPECT_EQ(named.size(), ckpt.names().size());
  for (auto& [name, t] : named) EXPECT_TRUE(ckpt.contains(name)) << name;
  // A gradient step through the tied embedding reaches both of its uses.
  m.setRequiresGrad(true);
  at::Tensor ids = at::tensor({5, 6, 7, 8}, at::kLong).unsqueeze(0);
  at::Tensor loss = -tokenLogprobs(m, ids).mean();
  loss.backward();
  ASSERT_TRUE(m.embed_tokens.grad().defined());
  EXPECT_GT(m.embed_tokens.grad().abs().sum().item<double>(), 0);
  EXPECT_GT(m.layers[0].q_bias.grad().abs().sum().item<double>(), 0);
}

TEST_F(TempDir, SavedCheckpointReloadsWithTheSameLogits) {
  Model m = loadModel(kData / "qwen2-tiny", {"cpu", "float32"});
  SaveOptions opt;
  opt.copy_files_from = kData / "qwen2-tiny";
  opt.max_shard_bytes = 200 * 1024;  // forces shards and an index
  saveModel(m, dir_ / "sharded", opt);
  EXPECT_TRUE(fs::exists(dir_ / "sharded" / "model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(dir_ / "sharded" / "tokenizer.json"));
  kb::Json index = kb::readJsonFile(dir_ / "sharded" / "model.safetensors.index.json");
  EXPECT_FALSE(index["weight_map"].contains("lm_head.weight"));
  EXPECT_GT(index["metadata"]["total_size"].get<int64_t>(), 0);
  Model back = loadModel(dir_ / "sharded", {"cpu", "float32"});
  EXPECT_LT(maxLogitDiff(back, "qwen2-tiny"), 1e-4);
  auto a = m.forward(at::tensor({1, 2, 3}, at::kLong).unsqueeze(0));
  EXPECT_TRUE(at::equal(a, back.forward(at::tensor({1, 2, 3}, at::kLong).unsqueeze(0))));

  // One file in bf16; config.json says so; the weights carry format=pt.
  opt.max_shard_bytes = 1LL << 40;
  opt.dtype = "bfloat16";
  saveModel(m, dir_ / "bf16", opt);
  EXPECT_TRUE(fs::exists(dir_ / "bf16" / "model.safetensors"));
  EXPECT_FALSE(fs::exists(dir_ / "bf16" / "model.safetensors.index.json"));
  EXPECT_EQ(kb::readJsonFile(dir_ / "bf16" / "config.json")["dtype"], "bfloat16");
  SafetensorsFile f(dir_ / "bf16" / "model.safetensors");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.find("model.norm.weight")->dtype, DType::BF16);
  EXPECT_EQ(loadModel(dir_ / "bf16").dtype(), at::kBFloat16);
  // Saving again over a sharded directory leaves no stale shards.
  saveModel(m, dir_ / "sharded", opt);
  for (const auto& entry : fs::directory_iterator(dir_ / "sharded"))
    EXPECT_EQ(entry.path().filename().string().find("-of-"), std::string::npos) << entry.path();

  // Untied (llama): lm_head.weight is written.
  Model l = loadModel(kData / "llama-tiny", {"cpu", "float32"});
  saveModel(l, dir_ / "llama", {});
  SafetensorsFile lf(dir_ / "llama" / "model.safetensors");
  EXPECT_NE(lf.find("lm_head.weight"), nullptr);
  EXPECT_LT(maxLogitDiff(loadModel(dir_ / "llama", {"cpu", "float32"}), "llama-tiny"), 1e-4);
}

TEST_F(TempDir, LoadErrorsNameTheTensorAndTheFile) {
  auto error = [](const fs::path& dir) {
    try {
      loadModel(dir, {"cpu", "float32"});
    } catch (const kb::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Missing tensors: all listed.
  Model m = loadModel(kData / "llama-tiny", {"cpu", "float32"});
  auto named = m.namedParameters();
  std::vector<std::pair<std::string, at::Tensor>> kept;
  for (auto& [name, t] : named)
    if (name != "model.layers.1.mlp.up_proj.weight" && name != "lm_head.weight") kept.emplace_back(name, t);
  fs::create_directories(dir_ / "missing");
  fs::copy_file(kData / "llama-tiny" / "config.json", dir_ / "missing" / "config.json");
  writeTensors(dir_ / "missing" / "model.safetensors", kept);
  std::string e = error(dir_ / "missing");
  EXPECT_NE(e.find("2 of"), std::string::npos) << e;
  EXPECT_NE(e.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("lm_head.weight"), std::string::npos) << e;

  // Shape mismatch: a config that disagrees with the weights.
  fs::create_directories(dir_ / "shape");
  fs::copy_file(kData / "llama-tiny" / "model.safetensors", dir_ / "shape" / "model.safetensors");
  kb::Json cfg = kb::readJsonFile(kData / "llama-tiny" / "config.json");
  cfg["intermediate_size"] = 48;
  kb::writeJsonFile(dir_ / "shape" / "config.json", cfg);
  e = error(dir_ / "shape");
  EXPECT_NE(e.find("model.layers.0.mlp.gate_proj.weight' has shape [64, 32], the config needs [48, 32]"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;

  // Unsupported architecture.
  cfg["architectures"] = {"Qwen3MoeForCausalLM"};
  kb::writeJsonFile(dir_ / "shape" / "config.json", cfg);
  e = error(dir_ / "shape");
  EXPECT_NE(e.find("unsupported architecture 'Qwen3MoeForCausalLM'"), std::string::npos) << e;

  EXPECT_THROW(loadModel(dir_ / "nowhere"), kb::UsageError);
  EXPECT_THROW(loadModel(kData / "llama-tiny", {"cpu", "int8"}), kb::UsageError);
}

TEST(Sampling, TopKTopPAndSeeds) {
  Model m = loadModel(kData / "qwen2-tiny", {"cpu", "float32"});
  std::vector<std::vector<int32_t>> prompts = {{10, 20, 30}, {40, 50}};
  auto run = [&](kb::chat::SamplingParams p, uint64_t seed) {
    at::Generator gen = makeGenerator(m.device(), seed);
    return generateBatch(m, prompts, p, gen);
  };
  kb::chat::SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 12;
  auto g = run(greedy, 0);
  // top_k = 1 and a tiny top_p are greedy whatever the temperature.
  kb::chat::SamplingParams k1 = greedy;
  k1.temperature = 1.3;
  k1.top_k = 1;
  kb::chat::SamplingParams p0 = greedy;
  p0.temperature = 0.7;
  p0.top_p = 1e-6;
  for (const auto& out : {run(k1, 5), run(p0, 6)})
    for (size_t b = 0; b < prompts.size(); ++b) EXPECT_EQ(out[b].token_ids, g[b].token_ids);
  // Sampling: the same seed repeats; another seed differs; log-probs are <= 0.
  kb::chat::SamplingParams s = greedy;
  s.temperature = 1.0;
  s.max_tokens = 32;
  auto a = run(s, 42), b = run(s, 42), c = run(s, 43);
  EXPECT_EQ(a[0].token_ids, b[0].token_ids);
  EXPECT_EQ(a[1].logprobs, b[1].logprobs);
  EXPECT_TRUE(a[0].token_ids != c[0].token_ids || a[1].token_ids != c[1].token_ids);
  for (float lp : a[0].logprobs) EXPECT_LE(lp, 0.0f);
  // top_k restricts the support: every sampled token is among the k best.
  kb::chat::SamplingParams k3 = s;
  k3.top_k = 3;
  k3.max_tokens = 1;
  at::Tensor logits = m.forward(at::tensor({10, 20, 30}, at::kLong).unsqueeze(0), {}, nullptr, true);
  at::Tensor top3 = std::get<1>(at::topk(logits[0], 3));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    int64_t t = run(k3, seed)[0].token_ids[0];
    EXPECT_TRUE((top3 == t).any().item<bool>()) << t;
  }
}

TEST(Sampling, StopTokensAndLengths) {
  Model m = loadModel(kData / "qwen2-tiny", {"cpu", "float32"});
  kb::chat::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 10;
  std::vector<std::vector<int32_t>> prompts = {{10, 20, 30}, {40, 50}};
  at::Generator gen = makeGenerator(m.device(), 0);
  auto free_run = generateBatch(m, prompts, p, gen);
  // Stop at row 0's third token: row 0 ends there, row 1 runs on.
  p.stop_token_ids = {free_run[0].token_ids[2]};
  auto out = generateBatch(m, prompts, p, gen);
  EXPECT_EQ(out[0].finish_reason, "stop");
  ASSERT_LE(out[0].token_ids.size(), 3u);
  EXPECT_EQ(out[0].token_ids.back(), p.stop_token_ids[0]);
  EXPECT_EQ(out[0].logprobs.size(), out[0].token_ids.size());
  for (size_t b = 0; b < 2; ++b) {
    const auto& ids = out[b].token_ids;
    EXPECT_EQ(std::vector<int32_t>(free_run[b].token_ids.begin(), free_run[b].token_ids.begin() + ids.size()), ids);
  }
  p.stop_token_ids.clear();
  p.max_tokens = 0;
  EXPECT_TRUE(generateBatch(m, prompts, p, gen)[0].token_ids.empty());
  p.max_tokens = 3;
  EXPECT_THROW(generateBatch(m, {{}}, p, gen), kb::UsageError);
  EXPECT_THROW(generateBatch(m, {{100000}}, p, gen), kb::UsageError);
}

TEST(LocalPolicy, ChatGenerationThroughTheInterface) {
  LocalPolicyOptions o;
  o.model_dir = kData / "qwen2-tiny";
  o.max_batch_size = 1;  // two chunks
  std::unique_ptr<LocalPolicy> policy = loadLocalPolicy(o);
  EXPECT_NE(policy->detail().find("Qwen2ForCausalLM"), std::string::npos);
  kb::chat::SamplingParams p;
  p.temperature = 0.8;
  p.top_p = 0.9;
  p.max_tokens = 16;
  p.seed = 7;
  std::vector<std::vector<kb::chat::Message>> convs = {{{.role = "user", .content = "Write a kernel."}},
                                                 {{.role = "system", .content = "Be brief."}, {.role = "user", .content = "hi"}}};
  auto out = policy->generateChat(convs, nullptr, p);
  ASSERT_EQ(out.size(), 2u);
  const int32_t im_end = policy->tokenizer().tokenToId("<|im_end|>");
  for (const Generation& c : out) {
    EXPECT_FALSE(c.token_ids.empty());
    EXPECT_EQ(c.logprobs.size(), c.token_ids.size());
    EXPECT_TRUE(c.finish_reason == "stop" || c.finish_reason == "length");
    if (c.finish_reason == "stop") {
      EXPECT_EQ(c.token_ids.back(), im_end);
    }
    std::vector<int32_t> body = c.token_ids;
    if (c.finish_reason == "stop") body.pop_back();
    EXPECT_EQ(c.text, policy->tokenizer().decode(body));
  }
  // Same seed, same completions.
  auto again = policy->generateChat(convs, nullptr, p);
  EXPECT_EQ(again[0].token_ids, out[0].token_ids);
  EXPECT_EQ(again[1].token_ids, out[1].token_ids);
}

// --- GPU (suite 'gpu') ------------------------------------------------------

// Issue 18: a Llama checkpoint was rendered as ChatML with Qwen's system
// prompt. Without a template its chats are refused; with Llama 3.1's
// template (in tokenizer_config.json) they are rendered in Llama's format and
// stop at <|eot_id|>.
TEST_F(TempDir, LlamaCheckpointChatsInItsOwnFormatOrNotAtAll) {
  LocalPolicyOptions o;
  o.model_dir = kData / "llama-tiny";
  kb::chat::SamplingParams p;
  p.max_tokens = 8;
  p.seed = 3;
  const std::vector<std::vector<kb::chat::Message>> convs = {{{.role = "user", .content = "hi"}}};
  std::unique_ptr<LocalPolicy> bare = loadLocalPolicy(o);
  EXPECT_TRUE(bare->chatTemplate().unavailable);
  EXPECT_THROW(bare->generateChat(convs, nullptr, p), kb::UsageError);
  EXPECT_EQ(bare->generate({{1, 5, 7}}, p).size(), 1u);  // token ids still work

  const fs::path llama = dir_ / "llama";
  fs::copy(kData / "llama-tiny", llama, fs::copy_options::recursive);
  kb::Json tc = kb::readJsonFile(llama / "tokenizer_config.json");
  std::ifstream in(fs::path(KB_SOURCE_ROOT) / "tests/policy/chat_templates/llama3.1.jinja");
  tc["chat_template"] = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  kb::writeJsonFile(llama / "tokenizer_config.json", tc);
  o.model_dir = llama;
  std::unique_ptr<LocalPolicy> policy = loadLocalPolicy(o);
  ASSERT_FALSE(policy->chatTemplate().unavailable);
  EXPECT_EQ(policy->chatTemplate().family, ChatFamily::Llama3);
  const std::string prompt = policy->chatTemplate().render(convs[0], nullptr, true);
  EXPECT_EQ(prompt.rfind("<|begin_of_text|><|start_header_id|>system<|end_header_id|>", 0), 0u) << prompt;
  EXPECT_EQ(prompt.find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(prompt.find("Qwen"), std::string::npos);
  p.max_tokens = 64;
  auto out = policy->generateChat(convs, nullptr, p);
  ASSERT_EQ(out.size(), 1u);
  const int32_t eot = policy->tokenizer().tokenToId("<|eot_id|>");
  ASSERT_GE(eot, 0);
  for (size_t i = 0; i + 1 < out[0].token_ids.size(); ++i) EXPECT_NE(out[0].token_ids[i], eot) << "did not stop at <|eot_id|>";
}

TEST(GpuModel, LogitsAndGreedyMatchOnCuda) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  for (const char* fixture : {"qwen2-tiny", "llama-tiny"}) {
    Model m = loadModel(kData / fixture, {"cuda", "float32"});
    double diff = maxLogitDiff(m, fixture);
    std::printf("%s cuda fp32 max |logit diff| = %.3g\n", fixture, diff);
    EXPECT_LT(diff, 1e-4) << fixture;
    expectGreedyParity(m, fixture);
  }
  Model bf = loadModel(kData / "qwen2-tiny", {"cuda", "bfloat16"});
  double diff = maxLogitDiff(bf, "qwen2-tiny");
  std::printf("qwen2-tiny cuda bf16 max |logit diff| = %.3g\n", diff);
  EXPECT_LT(diff, 0.5);
}

TEST(GpuModel, SamplingOnCudaIsSeeded) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  Model m = loadModel(kData / "qwen2-tiny", {"cuda", "bfloat16"});
  kb::chat::SamplingParams p;
  p.max_tokens = 32;
  p.top_k = 50;
  p.top_p = 0.95;
  std::vector<std::vector<int32_t>> prompts(16, std::vector<int32_t>{1, 2, 3, 4});
  at::Generator g1 = makeGenerator(m.device(), 3), g2 = makeGenerator(m.device(), 3);
  auto a = generateBatch(m, prompts, p, g1), b = generateBatch(m, prompts, p, g2);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(a[i].token_ids, b[i].token_ids);
}

}  // namespace
