#include "rl/episode.h"

#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/jsonl.h"

namespace fs = std::filesystem;

namespace kb::rl {

size_t Sequence::actionTokens() const {
  size_t n = 0;
  for (uint8_t m : mask) n += m;
  return n;
}

size_t Episode::actionTokens() const {
  size_t n = 0;
  for (const Sequence& s : sequences) n += s.actionTokens();
  return n;
}

size_t Episode::tokens() const {
  size_t n = 0;
  for (const Sequence& s : sequences) n += s.ids.size();
  return n;
}

std::vector<Json> readJsonl(const fs::path& path, size_t* skipped) {
  if (!fs::is_regular_file(path)) throw UsageError("cannot read " + path.string());
  return readJsonLines(path, skipped);
}

Json openAiTools(const Json& tools) {
  if (!tools.is_array() || tools.empty()) return nullptr;
  Json out = Json::array();
  for (const Json& t : tools) {
    if (t.contains("function")) {  // already OpenAI layout
      out.push_back(t);
      continue;
    }
    Json f = {{"name", t.value("name", "")}, {"description", t.value("description", "")}};
    f["parameters"] = t.contains("parameters") ? t["parameters"] : Json::object();
    out.push_back({{"type", "function"}, {"function", f}});
  }
  return out;
}

std::vector<chat::Message> promptMessages(const Json& messages, size_t count, const Json& elided) {
  std::set<size_t> cut;
  if (elided.is_array())
    for (const Json& e : elided)
      if (e.is_number_integer()) cut.insert(e.get<size_t>());
  std::vector<chat::Message> out;
  for (size_t i = 0; i < count && i < messages.size(); ++i) {
    if (cut.count(i)) {
      const std::string content = messages[i].value("content", "");
      chat::Message m;
      m.role = "tool";
      m.content = "[elided to fit the context: " + std::to_string(content.size()) +
                  " characters of tool output; run the tool again to see it]";
      out.push_back(m);
    } else {
      out.push_back(chat::messageFromJson(messages[i]));
    }
  }
  return out;
}

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool hasRecordedTokens(const Json& turns) {
  if (!turns.is_array() || turns.empty()) return false;
  for (const Json& t : turns) {
    if (t.contains("policy_error")) continue;  // a failed last turn sampled nothing
    const Json* r = t.contains("response") ? &t["response"] : nullptr;
    if (!r || !r->contains("token_ids") || !(*r)["token_ids"].is_array() || (*r)["token_ids"].empty())
      return false;
  }
  return true;
}

void appendTokens(Sequence& s, const std::vector<int32_t>& ids, uint8_t mask, const std::vector<float>* lp) {
  for (size_t i = 0; i < ids.size(); ++i) {
    s.ids.push_back(ids[i]);
    s.mask.push_back(mask);
    s.logprobs.push_back(lp && i < lp->size() ? (*lp)[i] : kNaN);
  }
}

bool startsWith(const std::vector<int32_t>& seq, const std::vector<int32_t>& prefix) {
  return prefix.size() <= seq.size() && std::equal(prefix.begin(), prefix.end(), seq.begin());
}

void fromRecorded(Episode& e, const Json& t, const llm::Tokenizer& tok, const llm::ChatTemplate& chat) {
  const Json tools = openAiTools(t.value("tools", Json()));
  const Json& messages = t["messages"];
  for (const Json& turn : t["turns"]) {
    if (turn.contains("policy_error")) continue;
    const Json& r = turn["response"];
    std::vector<int32_t> prompt;
    if (r.contains("prompt_token_ids") && r["prompt_token_ids"].is_array() && !r["prompt_token_ids"].empty()) {
      prompt = r["prompt_token_ids"].get<std::vector<int32_t>>();
    } else {
      auto msgs = promptMessages(messages, turn.value("prompt_messages", size_t{0}), turn.value("elided", Json()));
      prompt = chat.encode(tok, msgs, tools, /*add_generation_prompt=*/true).ids;
    }
    std::vector<int32_t> completion = r["token_ids"].get<std::vector<int32_t>>();
    std::vector<float> lp;
    if (r.contains("logprobs") && r["logprobs"].is_array())
      for (const Json& x : r["logprobs"]) lp.push_back(x.is_number() ? x.get<float>() : kNaN);
    // Merge into the previous sequence when this prompt extends it.
    if (!e.sequences.empty() && startsWith(prompt, e.sequences.back().ids)) {
      Sequence& s = e.sequences.back();
      std::vector<int32_t> rest(prompt.begin() + static_cast<long>(s.ids.size()), prompt.end());
      appendTokens(s, rest, 0, nullptr);
      appendTokens(s, completion, 1, &lp);
    } else {
      Sequence s;
      appendTokens(s, prompt, 0, nullptr);
      appendTokens(s, completion, 1, &lp);
      e.sequences.push_back(std::move(s));
    }
  }
}

void fromTemplate(Episode& e, const Json& t, const llm::Tokenizer& tok, const llm::ChatTemplate& chat) {
  const Json& messages = t["messages"];
  std::vector<chat::Message> msgs;
  for (const Json& m : messages) msgs.push_back(chat::messageFromJson(m));
  llm::ChatEncoding enc = chat.encode(tok, msgs, openAiTools(t.value("tools", Json())));
  Sequence s;
  s.ids = enc.ids;
  s.mask = enc.loss_mask;
  s.logprobs.assign(s.ids.size(), kNaN);
  e.sequences.push_back(std::move(s));
}

}  // namespace

Episode episodeFromTrajectory(const Json& t, const llm::Tokenizer& tok, const llm::ChatTemplate& chat,
                              const EpisodeOptions& options) {
  Episode e;
  e.rollout_id = t.value("rollout_id", "");
  e.task_id = t.value("task_id", "");
  if (!t.contains("messages") || !t["messages"].is_array() || t["messages"].empty())
    throw Error("trajectory '" + e.rollout_id + "' has no messages");
  if (t.contains("reward") && t["reward"].is_object()) {
    const Json& r = t["reward"];
    if (r.contains("value") && r["value"].is_number()) e.reward = r["value"].get<double>();
    if (r.contains("correct") && r["correct"].is_boolean()) e.passed = r["correct"].get<bool>();
    else e.passed = t.value("status", Json()) == "ok";
  } else if (t.contains("reward") && t["reward"].is_number()) {
    e.reward = t["reward"].get<double>();
    e.passed = t.value("status", Json()) == "ok";
  } else {
    e.passed = t.value("status", Json()) == "ok";
  }
  if (options.use_recorded_tokens && hasRecordedTokens(t.value("turns", Json()))) {
    e.tokens_from = "recorded";
    fromRecorded(e, t, tok, chat);
  } else {
    e.tokens_from = "template";
    fromTemplate(e, t, tok, chat);
  }
  for (Sequence& s : e.sequences) {
    if (!s.mask.empty()) s.mask[0] = 0;
    if (options.max_length > 0 && s.ids.size() > options.max_length) {
      s.ids.resize(options.max_length);
      s.mask.resize(options.max_length);
      s.logprobs.resize(options.max_length);
      e.truncated = true;
    }
  }
  return e;
}

}  // namespace kb::rl
