#include "llm/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "core/error.h"

namespace fs = std::filesystem;

namespace kb::llm {

// ---------------------------------------------------------------------------
// UTF-8 helpers

namespace {

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Length of the valid UTF-8 character at s[i], or 0 if the bytes there are
// not one; `prefix` gets the length of the maximal valid prefix (>= 1) so
// that an invalid sequence is replaced by a single U+FFFD.
size_t utf8CharAt(std::string_view s, size_t i, size_t* prefix, uint32_t* cp_out = nullptr) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  *prefix = 1;
  if (c < 0x80) {
    if (cp_out) *cp_out = c;
    return 1;
  }
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3; cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4; cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return 0;
    unsigned char cc = b(i + k);
    if (k == 1 ? (cc < lo || cc > hi) : (cc < 0x80 || cc > 0xBF)) return 0;
    cp = (cp << 6) | (cc & 0x3F);
    *prefix = k + 1;
  }
  if (cp_out) *cp_out = cp;
  return len;
}

bool isSpaceChar(uint32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool isWordChar(uint32_t cp) {
  if (cp < 0x80) return std::isalnum(static_cast<int>(cp)) || cp == '_';
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO || cat == UTF8PROC_CATEGORY_ND ||
         cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

// Code point just before byte offset `end` (assumes valid UTF-8), and its start.
uint32_t codePointBefore(std::string_view s, size_t end, size_t* start) {
  size_t i = end;
  do { --i; } while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
  size_t prefix;
  uint32_t cp = 0;
  utf8CharAt(s, i, &prefix, &cp);
  *start = i;
  return cp;
}

// GPT-2's reversible map from bytes to printable characters: printable
// Latin-1 bytes map to themselves, the other 68 to U+0100.. in byte order.
struct ByteMap {
  std::array<uint32_t, 256> to_char{};
  std::array<std::string, 256> to_utf8;
  std::unordered_map<uint32_t, unsigned char> to_byte;
  ByteMap() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? b : 256 + n++;
      appendUtf8(to_utf8[b], to_char[b]);
      to_byte[to_char[b]] = static_cast<unsigned char>(b);
    }
  }
};

const ByteMap& byteMap() {
  static const ByteMap map;
  return map;
}

// The GPT-2 pattern that ByteLevel(use_regex = true) splits with.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available).
class Regex {
 public:
  Regex(std::string_view pattern, const std::string& where) {
    int err = 0;
    PCRE2_SIZE off = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
    if (!code_) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error(where + ": cannot compile regex at offset " + std::to_string(off) + ": " +
                  reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches [begin, end) left to right, as find_iter.
  std::vector<std::pair<size_t, size_t>> findAll(std::string_view s) const {
    std::vector<std::pair<size_t, size_t>> out;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    size_t start = 0;
    while (start <= s.size()) {
      int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), start,
                           PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        pcre2_match_data_free(md);
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        throw Error(std::string("regex match failed: ") + reinterpret_cast<const char*>(msg));
      }
      PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      size_t b = ov[0], e = ov[1];
      if (e > b) {
        out.emplace_back(b, e);
        start = e;
      } else {  // empty match: step over one character
        if (b >= s.size()) break;
        size_t prefix;
        size_t len = utf8CharAt(s, b, &prefix);
        start = b + (len ? len : 1);
      }
    }
    pcre2_match_data_free(md);
    return out;
  }

 private:
  pcre2_code* code_ = nullptr;
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// One pre-tokenizer step. Pieces are raw UTF-8 until the final ByteLevel.
struct PreStep {
  enum Kind { Split, ByteLevel } kind = Split;
  std::shared_ptr<Regex> regex;   // Split (a String pattern is quoted into a regex)
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  bool add_prefix_space = false;  // ByteLevel
};

std::string quoteRegex(std::string_view literal) {
  std::string out = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal.compare(i, 2, "\\E") == 0) {
      out += "\\E\\\\E\\Q";
      ++i;
    } else {
      out += literal[i];
    }
  }
  return out + "\\E";
}

void splitPieces(const PreStep& step, std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const std::string& piece : pieces) {
    // Segments covering the piece, each flagged as a match or not.
    std::vector<std::tuple<size_t, size_t, bool>> segs;
    size_t pos = 0;
    for (auto [b, e] : step.regex->findAll(piece)) {
      if (b > pos) segs.emplace_back(pos, b, false);
      segs.emplace_back(b, e, true);
      pos = e;
    }
    if (pos < piece.size()) segs.emplace_back(pos, piece.size(), false);
    if (step.invert)
      for (auto& s : segs) std::get<2>(s) = !std::get<2>(s);
    std::vector<std::pair<size_t, size_t>> parts;
    switch (step.behavior) {
      case SplitBehavior::Removed:
        for (auto [b, e, m] : segs)
          if (!m) parts.emplace_back(b, e);
        break;
      case SplitBehavior::Isolated:
        for (auto [b, e, m] : segs) parts.emplace_back(b, e);
        break;
      case SplitBehavior::MergedWithPrevious: {
        bool prev_match = false;
        for (auto [b, e, m] : segs) {
          if (m && !prev_match && !parts.empty()) parts.back().second = e;
          else parts.emplace_back(b, e);
          prev_match = m;
        }
        break;
      }
      case SplitBehavior::MergedWithNext: {
        bool prev_match = false;
        for (auto [b, e, m] : segs) {
          if (prev_match && !parts.empty()) parts.back().second = e;
          else parts.emplace_back(b, e);
          prev_match = m;
        }
        break;
      }
      case SplitBehavior::Contiguous: {
        bool prev_match = false;
        for (auto [b, e, m] : segs) {
          if (m && prev_match && !parts.empty()) parts.back().second = e;
          else parts.emplace_back(b, e);
          prev_match = m;
        }
        break;
      }
    }
    for (auto [b, e] : parts)
      if (e > b) out.push_back(piece.substr(b, e - b));
  }
  pieces = std::move(out);
}

enum class NormForm { NFC, NFD, NFKC, NFKD };

std::string normalizeUnicode(std::string_view s, NormForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* dst = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                    static_cast<utf8proc_option_t>(options));
  if (n < 0) throw Error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return out;
}

uint64_t pairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

std::string sanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    size_t prefix;
    size_t len = utf8CharAt(bytes, i, &prefix);
    if (len) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += prefix;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------

struct Tokenizer::Impl {
  std::string where;
  // Model (BPE).
  std::unordered_map<std::string, int32_t> vocab;
  std::vector<std::string> id_to_token;  // vocabulary and added tokens by id
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (a, b) -> (rank, merged id)
  std::array<int32_t, 256> byte_ids{};  // id of each byte's character, -1 if absent
  bool ignore_merges = false;
  int32_t unk_id = -1;
  // Added tokens.
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> added_by_content;
  std::vector<bool> special;  // by id
  std::array<std::vector<size_t>, 256> added_by_first_byte;  // indices into added, longest first
  // Normalizer, pre-tokenizer, post-processor, decoder.
  std::vector<NormForm> normalizers;
  std::vector<PreStep> pre_steps;
  std::vector<int32_t> prefix_ids, suffix_ids;  // TemplateProcessing "single" around $A
  bool byte_level_decoder = false;
  // Cache of BPE results per byte-level piece.
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  void loadModel(const Json& m);
  void loadAddedTokens(const Json& list);
  void loadNormalizer(const Json& n);
  void loadPreTokenizer(const Json& p, bool top);
  void loadPostProcessor(const Json& p);
  void loadDecoder(const Json& d);

  void bpe(std::string_view piece, std::vector<int32_t>& out) const;
  void encodeSegment(std::string_view text, std::vector<int32_t>& out) const;
};

void Tokenizer::Impl::loadModel(const Json& m) {
  if (!m.is_object()) throw Error(where + ": no model");
  const std::string type = m.value("type", std::string("BPE"));
  if (type != "BPE")
    throw Error(where + ": model type '" + type + "' is not supported (only byte-level BPE)");
  if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0)
    throw Error(where + ": BPE dropout is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (m.contains(key) && m[key].is_string() && !m[key].get<std::string>().empty())
      throw Error(where + ": BPE " + key + " is not supported");
  if (m.contains("byte_fallback") && m["byte_fallback"].is_boolean() && m["byte_fallback"].get<bool>())
    throw Error(where + ": byte_fallback BPE (SentencePiece style) is not supported; only byte-level BPE");
  if (m.contains("ignore_merges") && m["ignore_merges"].is_boolean()) ignore_merges = m["ignore_merges"];
  if (!m.contains("vocab") || !m["vocab"].is_object()) throw Error(where + ": model.vocab is not an object");
  for (const auto& [tok, id] : m["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw Error(where + ": vocab entry '" + tok + "' has an invalid id");
    int32_t i = id.get<int32_t>();
    vocab[tok] = i;
    if (static_cast<size_t>(i) >= id_to_token.size()) id_to_token.resize(i + 1);
    id_to_token[i] = tok;
  }
  if (m.contains("unk_token") && m["unk_token"].is_string()) {
    auto it = vocab.find(m["unk_token"].get<std::string>());
    if (it != vocab.end()) unk_id = it->second;
  }
  const Json& ms = m.contains("merges") ? m["merges"] : Json::array();
  if (!ms.is_array()) throw Error(where + ": model.merges is not a list");
  int32_t rank = 0;
  for (const auto& entry : ms) {
    std::string a, b;
    if (entry.is_string()) {
      const std::string s = entry.get<std::string>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos) throw Error(where + ": merge '" + s + "' has no space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
      a = entry[0].get<std::string>();
      b = entry[1].get<std::string>();
    } else {
      throw Error(where + ": merge #" + std::to_string(rank) + " is neither \"a b\" nor [a, b]");
    }
    auto ia = vocab.find(a), ib = vocab.find(b), iab = vocab.find(a + b);
    if (ia == vocab.end() || ib == vocab.end() || iab == vocab.end())
      throw Error(where + ": merge #" + std::to_string(rank) + " ('" + a + "', '" + b +
                  "') uses or makes a token outside the vocabulary");
    merges.emplace(pairKey(ia->second, ib->second), std::make_pair(rank, iab->second));
    ++rank;
  }
  const ByteMap& bm = byteMap();
  for (int b = 0; b < 256; ++b) {
    auto it = vocab.find(bm.to_utf8[b]);
    byte_ids[b] = it == vocab.end() ? -1 : it->second;
  }
}

void Tokenizer::Impl::loadAddedTokens(const Json& list) {
  if (list.is_null()) return;
  if (!list.is_array()) throw Error(where + ": added_tokens is not a list");
  for (const auto& t : list) {
    AddedToken a;
    if (!t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
        !t["content"].is_string())
      throw Error(where + ": added token without id and content: " + t.dump());
    a.id = t["id"].get<int32_t>();
    a.content = t["content"].get<std::string>();
    if (a.content.empty()) throw Error(where + ": empty added token (id " + std::to_string(a.id) + ")");
    auto flag = [&](const char* k) { return t.contains(k) && t[k].is_boolean() && t[k].get<bool>(); };
    a.special = flag("special");
    a.lstrip = flag("lstrip");
    a.rstrip = flag("rstrip");
    a.single_word = flag("single_word");
    if (static_cast<size_t>(a.id) >= id_to_token.size()) id_to_token.resize(a.id + 1);
    id_to_token[a.id] = a.content;
    added_by_content[a.content] = a.id;
    added.push_back(a);
  }
  special.assign(id_to_token.size(), false);
  for (size_t i = 0; i < added.size(); ++i) {
    special[added[i].id] = added[i].special;
    added_by_first_byte[static_cast<unsigned char>(added[i].content[0])].push_back(i);
  }
  for (auto& bucket : added_by_first_byte)
    std::stable_sort(bucket.begin(), bucket.end(), [&](size_t x, size_t y) {
      return added[x].content.size() > added[y].content.size();
    });
}

void Tokenizer::Impl::loadNormalizer(const Json& n) {
  if (n.is_null()) return;
  const std::string type = n.value("type", std::string());
  if (type == "Sequence") {
    for (const auto& sub : n.value("normalizers", Json::array())) loadNormalizer(sub);
  } else if (type == "NFC") normalizers.push_back(NormForm::NFC);
  else if (type == "NFD") normalizers.push_back(NormForm::NFD);
  else if (type == "NFKC") normalizers.push_back(NormForm::NFKC);
  else if (type == "NFKD") normalizers.push_back(NormForm::NFKD);
  else
    throw Error(where + ": normalizer '" + type + "' is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence)");
}

void Tokenizer::Impl::loadPreTokenizer(const Json& p, bool top) {
  if (p.is_null()) {
    if (top) throw Error(where + ": no pre_tokenizer; only byte-level BPE tokenizers are supported");
    return;
  }
  const std::string type = p.value("type", std::string());
  if (type == "Sequence") {
    for (const auto& sub : p.value("pretokenizers", Json::array())) loadPreTokenizer(sub, false);
  } else if (type == "Split") {
    PreStep s;
    const Json& pat = p.value("pattern", Json::object());
    if (pat.contains("Regex") && pat["Regex"].is_string())
      s.regex = std::make_shared<Regex>(pat["Regex"].get<std::string>(), where + ": Split pattern");
    else if (pat.contains("String") && pat["String"].is_string())
      s.regex = std::make_shared<Regex>(quoteRegex(pat["String"].get<std::string>()), where + ": Split pattern");
    else
      throw Error(where + ": Split pre-tokenizer without a Regex or String pattern");
    const std::string b = p.value("behavior", std::string("Isolated"));
    if (b == "Removed") s.behavior = SplitBehavior::Removed;
    else if (b == "Isolated") s.behavior = SplitBehavior::Isolated;
    else if (b == "MergedWithPrevious") s.behavior = SplitBehavior::MergedWithPrevious;
    else if (b == "MergedWithNext") s.behavior = SplitBehavior::MergedWithNext;
    else if (b == "Contiguous") s.behavior = SplitBehavior::Contiguous;
    else throw Error(where + ": Split behavior '" + b + "' is unknown");
    s.invert = p.value("invert", false);
    pre_steps.push_back(std::move(s));
  } else if (type == "Digits") {
    PreStep s;
    bool individual = p.value("individual_digits", false);
    s.regex = std::make_shared<Regex>(individual ? "\\p{N}" : "\\p{N}+", where + ": Digits");
    pre_steps.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    if (p.value("use_regex", true)) {
      PreStep s;
      s.regex = std::make_shared<Regex>(kGpt2Pattern, where + ": ByteLevel pattern");
      s.add_prefix_space = p.value("add_prefix_space", false);
      pre_steps.push_back(std::move(s));
    } else if (p.value("add_prefix_space", false)) {
      PreStep s;
      s.add_prefix_space = true;  // a prefix space and no split: an always-failing regex
      s.regex = std::make_shared<Regex>("(?!)", where);
      pre_steps.push_back(std::move(s));
    }
    PreStep s;
    s.kind = PreStep::ByteLevel;
    pre_steps.push_back(std::move(s));
  } else {
    throw Error(where + ": pre_tokenizer '" + type +
                "' is not supported (supported: ByteLevel, Split, Digits, Sequence)");
  }
  if (top) {
    if (pre_steps.empty() || pre_steps.back().kind != PreStep::ByteLevel)
      throw Error(where + ": the pre_tokenizer must end with ByteLevel (only byte-level BPE is supported)");
    for (size_t i = 0; i + 1 < pre_steps.size(); ++i)
      if (pre_steps[i].kind == PreStep::ByteLevel)
        throw Error(where + ": ByteLevel must be the last pre-tokenizer step");
  }
}

void Tokenizer::Impl::loadPostProcessor(const Json& p) {
  if (p.is_null()) return;
  const std::string type = p.value("type", std::string());
  if (type == "ByteLevel") return;  // offsets only; no ids change
  if (type == "Sequence") {
    for (const auto& sub : p.value("processors", Json::array())) loadPostProcessor(sub);
    return;
  }
  if (type != "TemplateProcessing")
    throw Error(where + ": post_processor '" + type +
                "' is not supported (supported: ByteLevel, TemplateProcessing, Sequence)");
  const Json& specials = p.value("special_tokens", Json::object());
  bool seen_a = false;
  for (const auto& piece : p.value("single", Json::array())) {
    if (piece.contains("Sequence")) {
      seen_a = true;
      continue;
    }
    if (!piece.contains("SpecialToken")) throw Error(where + ": TemplateProcessing piece " + piece.dump());
    const std::string name = piece["SpecialToken"].value("id", std::string());
    if (!specials.contains(name) || !specials[name].contains("ids"))
      throw Error(where + ": TemplateProcessing names special token '" + name + "' without ids");
    for (const auto& id : specials[name]["ids"])
      (seen_a ? suffix_ids : prefix_ids).push_back(id.get<int32_t>());
  }
}

void Tokenizer::Impl::loadDecoder(const Json& d) {
  if (d.is_null()) return;
  const std::string type = d.value("type", std::string());
  if (type == "ByteLevel") {
    byte_level_decoder = true;
  } else if (type == "Sequence") {
    for (const auto& sub : d.value("decoders", Json::array())) loadDecoder(sub);
  } else {
    throw Error(where + ": decoder '" + type + "' is not supported (only ByteLevel)");
  }
}

// Byte-level BPE of one piece (raw bytes): start from one symbol per byte and
// repeatedly merge the adjacent pair with the lowest merge rank (leftmost on
// ties) until no adjacent pair has a merge.
void Tokenizer::Impl::bpe(std::string_view piece, std::vector<int32_t>& out) const {
  const ByteMap& bm = byteMap();
  std::string key;
  for (unsigned char b : piece) key += bm.to_utf8[b];
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> result;
  auto whole = ignore_merges ? vocab.find(key) : vocab.end();
  if (whole != vocab.end()) {
    result.push_back(whole->second);
  } else {
    struct Sym { int32_t id; int prev, next; };
    std::vector<Sym> syms;
    for (unsigned char b : piece) {
      int32_t id = byte_ids[b] >= 0 ? byte_ids[b] : unk_id;
      if (id < 0) continue;  // no such byte and no unk token: dropped, as tokenizers does
      int n = static_cast<int>(syms.size());
      syms.push_back({id, n - 1, n + 1});
    }
    if (!syms.empty()) syms.back().next = -1;
    // Candidate merges ordered by (rank, position).
    using Cand = std::tuple<int32_t, int, int32_t>;  // rank, left position, merged id
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
    auto push = [&](int left) {
      if (left < 0 || syms[left].next < 0) return;
      auto it = merges.find(pairKey(syms[left].id, syms[syms[left].next].id));
      if (it != merges.end()) queue.emplace(it->second.first, left, it->second.second);
    };
    for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) push(i);
    while (!queue.empty()) {
      auto [rank, left, merged] = queue.top();
      queue.pop();
      if (syms[left].id < 0 || syms[left].next < 0) continue;  // gone
      int right = syms[left].next;
      auto it = merges.find(pairKey(syms[left].id, syms[right].id));
      if (it == merges.end() || it->second.first != rank) continue;  // stale
      syms[left].id = merged;
      syms[left].next = syms[right].next;
      if (syms[right].next >= 0) syms[syms[right].next].prev = left;
      syms[right].id = -1;
      push(syms[left].prev);
      push(left);
    }
    for (int i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) result.push_back(syms[i].id);
  }
  out.insert(out.end(), result.begin(), result.end());
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() > 200000) cache.clear();
  cache.emplace(std::move(key), std::move(result));
}

// Normalize, pre-tokenize and BPE a stretch of text without added tokens.
void Tokenizer::Impl::encodeSegment(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string normalized(text);
  for (NormForm f : normalizers) normalized = normalizeUnicode(normalized, f);
  std::vector<std::string> pieces{normalized};
  for (const PreStep& step : pre_steps) {
    if (step.kind == PreStep::ByteLevel) break;
    if (step.add_prefix_space)
      for (std::string& p : pieces)
        if (p.empty() || p[0] != ' ') p.insert(0, 1, ' ');
    splitPieces(step, pieces);
  }
  for (const std::string& p : pieces) bpe(p, out);
}

// ---------------------------------------------------------------------------

Tokenizer::Tokenizer(const Json& j, const std::string& where) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.where = where;
  if (!j.is_object()) throw Error(where + ": not a JSON object");
  try {
    m.loadModel(j.value("model", Json()));
    m.loadAddedTokens(j.value("added_tokens", Json()));
    if (m.special.size() < m.id_to_token.size()) m.special.resize(m.id_to_token.size(), false);
    m.loadNormalizer(j.value("normalizer", Json()));
    m.loadPreTokenizer(j.value("pre_tokenizer", Json()), true);
    m.loadPostProcessor(j.value("post_processor", Json()));
    m.loadDecoder(j.value("decoder", Json()));
  } catch (const Json::exception& e) {
    throw Error(where + ": " + e.what());
  }
}

Tokenizer Tokenizer::fromFile(const fs::path& path) {
  // A path the user gave: missing or unreadable is bad input (kb::UsageError).
  std::error_code ec;
  fs::path file = fs::is_directory(path, ec) ? path / "tokenizer.json" : path;
  if (!fs::exists(file, ec)) {
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw UsageError("cannot read tokenizer " + file.string() + ": " + ec.message());
    throw UsageError("tokenizer not found: " + file.string());
  }
  if (!std::ifstream(file)) throw UsageError("cannot read tokenizer " + file.string() + ": " + std::strerror(errno));
  return Tokenizer(readJsonFile(file), file.string());
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<int32_t> Tokenizer::encode(std::string_view raw, bool add_special_tokens) const {
  const Impl& m = *impl_;
  const std::string text = sanitizeUtf8(raw);
  std::vector<int32_t> out;
  if (add_special_tokens) out = m.prefix_ids;
  // Split out added tokens, leftmost-longest.
  size_t done = 0, i = 0;
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (size_t k : m.added_by_first_byte[static_cast<unsigned char>(text[i])]) {
      const AddedToken& a = m.added[k];
      if (text.compare(i, a.content.size(), a.content) != 0) continue;
      if (a.single_word) {
        size_t s;
        if (i > 0 && isWordChar(codePointBefore(text, i, &s))) continue;
        size_t end = i + a.content.size(), prefix;
        uint32_t cp = 0;
        if (end < text.size() && utf8CharAt(text, end, &prefix, &cp) && isWordChar(cp)) continue;
      }
      hit = &a;
      break;
    }
    if (!hit) {
      size_t prefix;
      size_t len = utf8CharAt(text, i, &prefix);
      i += len ? len : 1;
      continue;
    }
    size_t begin = i, end = i + hit->content.size();
    if (hit->lstrip)
      while (begin > done) {
        size_t s;
        if (!isSpaceChar(codePointBefore(text, begin, &s))) break;
        begin = s;
      }
    if (hit->rstrip)
      while (end < text.size()) {
        size_t prefix;
        uint32_t cp = 0;
        size_t len = utf8CharAt(text, end, &prefix, &cp);
        if (!len || !isSpaceChar(cp)) break;
        end += len;
      }
    m.encodeSegment(std::string_view(text).substr(done, begin - done), out);
    out.push_back(hit->id);
    done = i = end;
  }
  m.encodeSegment(std::string_view(text).substr(done), out);
  if (add_special_tokens) out.insert(out.end(), m.suffix_ids.begin(), m.suffix_ids.end());
  return out;
}

std::string Tokenizer::decodeBytes(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  const Impl& m = *impl_;
  const ByteMap& bm = byteMap();
  std::string out;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= m.id_to_token.size() || m.id_to_token[id].empty()) continue;
    if (skip_special_tokens && m.special[id]) continue;
    const std::string& tok = m.id_to_token[id];
    if (!m.byte_level_decoder) {  // tokenizers joins tokens with spaces when there is no decoder
      if (!first) out += ' ';
      out += tok;
      first = false;
      continue;
    }
    // Map each character back to its byte; a token with a character outside
    // the byte map (an added token such as "<|im_end|>" is inside it) is
    // taken as its own UTF-8 bytes, as tokenizers' ByteLevel decoder does.
    std::string bytes;
    bool ok = true;
    for (size_t i = 0; i < tok.size();) {
      size_t prefix;
      uint32_t cp = 0;
      size_t len = utf8CharAt(tok, i, &prefix, &cp);
      auto it = len ? bm.to_byte.find(cp) : bm.to_byte.end();
      if (it == bm.to_byte.end()) {
        ok = false;
        break;
      }
      bytes += static_cast<char>(it->second);
      i += len;
    }
    out += ok ? bytes : tok;
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return sanitizeUtf8(decodeBytes(ids, skip_special_tokens));
}

int32_t Tokenizer::tokenToId(std::string_view token) const {
  auto a = impl_->added_by_content.find(std::string(token));
  if (a != impl_->added_by_content.end()) return a->second;
  auto v = impl_->vocab.find(std::string(token));
  return v == impl_->vocab.end() ? -1 : v->second;
}

std::string Tokenizer::idToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_token.size()) return {};
  return impl_->id_to_token[id];
}

int64_t Tokenizer::vocabSize() const { return static_cast<int64_t>(impl_->id_to_token.size()); }

bool Tokenizer::isSpecial(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[id];
}

const std::vector<AddedToken>& Tokenizer::addedTokens() const { return impl_->added; }

}  // namespace kb::llm
