#include "llm/tokenizer.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json.h"
#include "kb_config.h"

namespace fs = std::filesystem;
using namespace kb::llm;

namespace {

const fs::path kData = fs::path(KB_SOURCE_ROOT) / "testdata" / "policy";

const kb::Json& expected() {
  static const kb::Json j = kb::readJsonFile(kData / "tokenizer_expected.json");
  return j;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class TokenizerParity : public ::testing::TestWithParam<std::string> {};

// Our ids equal tokenizers' on the corpus (CUDA, Python, multilingual and
// edge cases: whole files and every line) and so do the decodes.
TEST_P(TokenizerParity, IdsAndDecodesEqualTheReference) {
  const std::string kind = GetParam();
  Tokenizer tok = Tokenizer::fromFile(kData / "tokenizers" / (kind + ".json"));
  const kb::Json& e = expected();
  const kb::Json& ref = e["tokenizers"][kind];
  size_t n = e["texts"].size(), id_mismatches = 0, decode_mismatches = 0;
  ASSERT_GT(n, 50u);
  for (size_t i = 0; i < n; ++i) {
    const std::string text = e["texts"][i];
    const std::string name = e["cases"][i];
    std::vector<int32_t> want = ref["ids"][i].get<std::vector<int32_t>>();
    std::vector<int32_t> got = tok.encode(text);
    if (got != want) {
      ++id_mismatches;
      ADD_FAILURE() << kind << " " << name << "\n  want " << show(want) << "\n  got  " << show(got);
    }
    std::string decoded = tok.decode(want);
    if (decoded != ref["decoded"][i].get<std::string>()) {
      ++decode_mismatches;
      ADD_FAILURE() << kind << " decode " << name << ": '" << decoded << "'";
    }
  }
  EXPECT_EQ(id_mismatches, 0u);
  EXPECT_EQ(decode_mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerParity, ::testing::Values("qwen", "llama3", "gpt2"));

TEST(Tokenizer, RoundTripsText) {
  Tokenizer llama = Tokenizer::fromFile(kData / "tokenizers" / "llama3.json");
  Tokenizer qwen = Tokenizer::fromFile(kData / "qwen2-tiny");  // a directory works too
  for (const auto& t : expected()["texts"]) {
    const std::string text = t.get<std::string>();
    // No normalizer: exact bytes back (the BOS the template adds is special).
    EXPECT_EQ(llama.decode(llama.encode(text), /*skip_special_tokens=*/true), text);
    // NFC normalizer: the text comes back unless it had decomposed accents.
    if (text.find("decomposed") == std::string::npos) {
      EXPECT_EQ(qwen.decode(qwen.encode(text)), text);
    }
  }
  const std::string nfd = "e\xCC\x81t\xC3\xA9";  // e + combining acute, then é
  EXPECT_EQ(qwen.decode(qwen.encode(nfd)), "\xC3\xA9t\xC3\xA9");
}

TEST(Tokenizer, SpecialTokensAndPostProcessor) {
  Tokenizer qwen = Tokenizer::fromFile(kData / "tokenizers" / "qwen.json");
  const int32_t im_start = qwen.tokenToId("<|im_start|>"), im_end = qwen.tokenToId("<|im_end|>");
  const int32_t tool_call = qwen.tokenToId("<tool_call>");
  ASSERT_GE(im_start, 0);
  ASSERT_GE(tool_call, 0);
  EXPECT_TRUE(qwen.isSpecial(im_start));
  EXPECT_FALSE(qwen.isSpecial(tool_call));
  std::vector<int32_t> ids = qwen.encode("x<|im_start|>user<|im_end|><tool_call>");
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[1], im_start);
  EXPECT_EQ(ids[ids.size() - 2], im_end);
  EXPECT_EQ(ids.back(), tool_call);
  EXPECT_EQ(qwen.decode(ids), "x<|im_start|>user<|im_end|><tool_call>");
  EXPECT_EQ(qwen.decode(ids, /*skip_special_tokens=*/true), "xuser<tool_call>");
  EXPECT_EQ(qwen.idToToken(im_end), "<|im_end|>");
  EXPECT_EQ(qwen.tokenToId("definitely not a token"), -1);
  EXPECT_EQ(qwen.vocabSize(), 802);

  Tokenizer llama = Tokenizer::fromFile(kData / "tokenizers" / "llama3.json");
  const int32_t bos = llama.tokenToId("<|begin_of_text|>");
  EXPECT_EQ(llama.encode("hi").front(), bos);
  EXPECT_NE(llama.encode("hi", /*add_special_tokens=*/false).front(), bos);
}

TEST(Tokenizer, InvalidUtf8IsReplacedNotFatal) {
  Tokenizer qwen = Tokenizer::fromFile(kData / "tokenizers" / "qwen.json");
  const std::string bad = std::string("ok ") + "\xFF\xC3" + " end";
  std::vector<int32_t> ids = qwen.encode(bad);
  EXPECT_EQ(qwen.decode(ids), "ok \xEF\xBF\xBD\xEF\xBF\xBD end");
  EXPECT_EQ(sanitizeUtf8("\xE2\x82"), "\xEF\xBF\xBD");  // a cut 3-byte char is one replacement
  EXPECT_EQ(sanitizeUtf8("a\xED\xA0\x80"), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  // decodeBytes keeps partial characters (a stream cut mid-character).
  std::vector<int32_t> euro = qwen.encode("\xE2\x82\xAC");
  std::string bytes;
  for (int32_t id : euro) bytes += qwen.decodeBytes({id});
  EXPECT_EQ(bytes, "\xE2\x82\xAC");
}

TEST(Tokenizer, RefusesWhatItDoesNotImplement) {
  kb::Json base = kb::readJsonFile(kData / "tokenizers" / "qwen.json");
  auto error = [](const kb::Json& j) {
    try {
      Tokenizer t(j, "tok.json");
    } catch (const kb::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  kb::Json j = base;
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(error(j).find("tok.json: model type 'WordPiece' is not supported"), std::string::npos);
  j = base;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}};
  EXPECT_NE(error(j).find("pre_tokenizer 'Metaspace'"), std::string::npos);
  j = base;
  j["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_NE(error(j).find("normalizer 'Lowercase'"), std::string::npos);
  j = base;
  j["model"]["merges"].push_back("Ġ zzzzzz");
  EXPECT_NE(error(j).find("outside the vocabulary"), std::string::npos);
  j = base;
  j["model"]["byte_fallback"] = true;
  EXPECT_NE(error(j).find("byte_fallback"), std::string::npos);
  j = base;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  EXPECT_NE(error(j).find("cannot compile regex"), std::string::npos);
  EXPECT_THROW(Tokenizer::fromFile(kData / "nope.json"), kb::UsageError);
}

}  // namespace
