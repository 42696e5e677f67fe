// Hugging Face tokenizer.json, byte-level BPE (Qwen2 / Qwen2.5, Llama 3, GPT-2
// style), without torch.
//
// encode(text):
//   1. split out added tokens (leftmost-longest match on the raw text),
//   2. normalize the rest (none, NFC, NFD, NFKC, NFKD; utf8proc),
//   3. pre-tokenize: the Split regexes (PCRE2 with Unicode properties), Digits,
//      ByteLevel (optional GPT-2 regex, then bytes -> printable characters),
//   4. BPE each piece: merge the adjacent pair of lowest merge rank until no
//      merge applies (ignore_merges: a piece that is itself in the vocabulary
//      is one token),
//   5. post-process: TemplateProcessing's special tokens (e.g. Llama 3's BOS)
//      when add_special_tokens is true.
// decode(ids): tokens -> ByteLevel decoder -> bytes.
//
// Anything outside this (WordPiece, Unigram, Metaspace, byte_fallback, ...)
// is refused at load with the name of the component. docs/policy-model.md
// lists what is read from the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace kb::llm {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;  // skipped by decode(skip_special_tokens = true)
  bool lstrip = false;   // swallows whitespace on its left when matched
  bool rstrip = false;   // swallows whitespace on its right when matched
  bool single_word = false;
};

class Tokenizer {
 public:
  // Reads <path> (a tokenizer.json, or a directory holding one).
  static Tokenizer fromFile(const std::filesystem::path& path);
  explicit Tokenizer(const Json& tokenizer_json, const std::string& where = "tokenizer.json");
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Token ids of `text`. Invalid UTF-8 is replaced by U+FFFD first.
  // add_special_tokens applies the post-processor's template (as
  // tokenizers' encode() does by default).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;

  // The bytes the tokens stand for (may end inside a UTF-8 character when a
  // sequence was cut mid-character).
  std::string decodeBytes(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;
  // As tokenizers' decode(): decodeBytes with invalid UTF-8 replaced by U+FFFD.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  // -1 when the token is in neither the vocabulary nor the added tokens.
  int32_t tokenToId(std::string_view token) const;
  // The token's string as stored (byte-level characters for vocabulary
  // tokens); "" for an id that is not assigned.
  std::string idToToken(int32_t id) const;
  // 1 + the largest assigned id.
  int64_t vocabSize() const;
  bool isSpecial(int32_t id) const;
  const std::vector<AddedToken>& addedTokens() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Replaces invalid UTF-8 sequences with U+FFFD (as Python's errors="replace").
std::string sanitizeUtf8(std::string_view bytes);

}  // namespace kb::llm
