#include "llm/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/json.h"
#include "kb_config.h"
#include "llm/model_config.h"

namespace fs = std::filesystem;
using namespace kb::llm;

namespace {

const fs::path kData = fs::path(KB_SOURCE_ROOT) / "testdata" / "policy";

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kb_policy_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A file with the given header and `data_bytes` zero bytes after it.
  fs::path rawFile(const std::string& name, const std::string& header, size_t data_bytes, uint64_t len = 0) {
    fs::path p = dir_ / name;
    std::ofstream out(p, std::ios::binary);
    uint64_t n = len ? len : header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header << std::string(data_bytes, '\0');
    return p;
  }
  std::string errorOf(const fs::path& p) {
    try {
      SafetensorsFile f(p);
    } catch (const kb::Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(TempDir, WriteThenReadRoundTrips) {
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  std::vector<uint16_t> b = {0x3f80, 0xc000};  // bf16 1.0, -2.0
  std::vector<int64_t> c = {7, -8, 9};
  writeSafetensors(dir_ / "t.safetensors",
                   {{"a", DType::F32, {2, 3}, a.data()}, {"b.weight", DType::BF16, {2}, b.data()},
                    {"c", DType::I64, {3}, c.data()}, {"empty", DType::F32, {0, 4}, nullptr}},
                   {{"format", "pt"}, {"note", "x"}});
  SafetensorsFile f(dir_ / "t.safetensors");
  ASSERT_EQ(f.tensors().size(), 4u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("note"), "x");
  const TensorInfo* ia = f.find("a");
  ASSERT_NE(ia, nullptr);
  EXPECT_EQ(ia->dtype, DType::F32);
  EXPECT_EQ(ia->shape, (std::vector<int64_t>{2, 3}));
  auto bytes = f.bytes("a");
  ASSERT_EQ(bytes.size(), 24u);
  EXPECT_EQ(std::memcmp(bytes.data(), a.data(), 24), 0);
  EXPECT_EQ(std::memcmp(f.bytes("b.weight").data(), b.data(), 4), 0);
  EXPECT_EQ(std::memcmp(f.bytes("c").data(), c.data(), 24), 0);
  EXPECT_EQ(f.bytes("empty").size(), 0u);
  EXPECT_THROW(f.bytes("nope"), kb::Error);
  // The header is padded to a multiple of 8 bytes (aligned data).
  std::ifstream in(dir_ / "t.safetensors", std::ios::binary);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  EXPECT_EQ(len[0] % 8, 0);
}

TEST_F(TempDir, CorruptFilesAreRejectedWithTheFileName) {
  EXPECT_NE(errorOf(rawFile("short", "", 0, 1000)).find("does not fit"), std::string::npos);
  EXPECT_NE(errorOf(rawFile("badjson", "{not json", 0)).find("invalid JSON header"), std::string::npos);
  EXPECT_NE(errorOf(rawFile("range", R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8))
                .find("outside the data section"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile("count", R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16))
                .find("needs 12"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile("overlap", R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                       R"("y":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 16))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(errorOf(rawFile("dtype", R"({"x":{"dtype":"Q4","shape":[4],"data_offsets":[0,4]}})", 4))
                .find("unsupported safetensors dtype 'Q4'"),
            std::string::npos);
  std::string e = errorOf(rawFile("named", R"({"x":{"dtype":"F32","shape":[1]}})", 4));
  EXPECT_NE(e.find("named"), std::string::npos) << e;
  EXPECT_NE(e.find("'x'"), std::string::npos) << e;
  EXPECT_NE(errorOf(dir_ / "missing.safetensors").find("cannot open"), std::string::npos);
}

TEST(Checkpoint, ReadsShardedFixtureThroughItsIndex) {
  Checkpoint ckpt(kData / "qwen2-tiny");
  auto names = ckpt.names();
  EXPECT_TRUE(ckpt.contains("model.embed_tokens.weight"));
  EXPECT_TRUE(ckpt.contains("model.layers.1.self_attn.q_proj.bias"));
  EXPECT_EQ(ckpt.info("model.norm.weight").shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(ckpt.bytes("model.norm.weight").size(), 64u * 4);
  EXPECT_NE(ckpt.fileOf("model.norm.weight").filename().string().find("-of-00003"), std::string::npos);
  EXPECT_THROW(ckpt.info("lm_head.weight"), kb::Error);  // tied: not stored
}

TEST_F(TempDir, CheckpointErrors) {
  EXPECT_THROW(Checkpoint(dir_ / "nope"), kb::UsageError);
  EXPECT_THROW(Checkpoint{dir_}, kb::UsageError);  // no safetensors at all
  kb::writeJsonFile(dir_ / "model.safetensors.index.json",
                    kb::Json{{"weight_map", {{"a", "model-00001-of-00002.safetensors"}}}});
  try {
    Checkpoint c(dir_);
    FAIL() << "expected an error";
  } catch (const kb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("model-00001-of-00002.safetensors"), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, ReadsTheFixturesV5Layout) {
  ModelConfig q = readModelConfig(kData / "qwen2-tiny");
  EXPECT_EQ(q.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(q.hidden_size, 64);
  EXPECT_EQ(q.num_key_value_heads, 2);
  EXPECT_EQ(q.head_dim, 16);
  EXPECT_TRUE(q.tie_word_embeddings);
  EXPECT_TRUE(q.qkv_bias);
  EXPECT_FALSE(q.o_bias);
  EXPECT_DOUBLE_EQ(q.rope.theta, 1e6);
  EXPECT_EQ(q.rope.type, "default");
  EXPECT_EQ(q.dtype, "float32");
  ModelConfig l = readModelConfig(kData / "llama-tiny");
  EXPECT_EQ(l.rope.type, "llama3");
  EXPECT_DOUBLE_EQ(l.rope.factor, 8.0);
  EXPECT_EQ(l.rope.original_max_position_embeddings, 64);
  EXPECT_TRUE(l.qkv_bias && l.o_bias && l.mlp_bias);
  EXPECT_FALSE(l.tie_word_embeddings);
  EXPECT_EQ(l.dtype, "bfloat16");
}

TEST(ModelConfig, ReadsTheV4LayoutAndRejectsWhatItCannotRun) {
  kb::Json j = kb::Json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "vocab_size": 128, "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 1, "num_attention_heads": 8, "num_key_value_heads": 2, "torch_dtype": "bfloat16",
    "rope_theta": 500000.0, "rope_scaling": {"type": "linear", "factor": 2.0}, "eos_token_id": [5, 6]})");
  ModelConfig c = parseModelConfig(j);
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_EQ(c.rope.type, "linear");
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(c.head_dim, 8);

  auto error = [&](kb::Json changed) {
    try {
      parseModelConfig(changed, "cfg.json");
    } catch (const kb::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  kb::Json bad = j;
  bad["architectures"] = {"GPT2LMHeadModel"};
  EXPECT_NE(error(bad).find("unsupported architecture 'GPT2LMHeadModel'"), std::string::npos);
  EXPECT_NE(error(bad).find("Qwen2ForCausalLM"), std::string::npos);
  bad = j;
  bad["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  EXPECT_NE(error(bad).find("rope scaling 'dynamic' is not supported"), std::string::npos);
  bad = j;
  bad["num_key_value_heads"] = 3;
  EXPECT_NE(error(bad).find("not a multiple of num_key_value_heads"), std::string::npos);
  bad = j;
  bad.erase("vocab_size");
  EXPECT_NE(error(bad).find("cfg.json: 'vocab_size' must be an integer"), std::string::npos);
  bad = j;
  bad["hidden_act"] = "gelu";
  EXPECT_NE(error(bad).find("hidden_act 'gelu'"), std::string::npos);
  bad = j;
  bad["architectures"] = {"Qwen2ForCausalLM"};
  bad["use_sliding_window"] = true;
  EXPECT_NE(error(bad).find("use_sliding_window"), std::string::npos);
}

}  // namespace
