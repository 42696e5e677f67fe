#include "llm/commands.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/json.h"
#include "llm/chat_template.h"
#include "llm/model.h"
#include "llm/policy.h"
#include "llm/sampler.h"
#include "llm/tokenizer.h"

namespace kb::llm {
namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A JSON file given by the user: a missing or malformed one is bad input (exit 2).
Json readUserJson(const std::string& path) {
  try {
    return readJsonFile(path);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// --ids: a JSON list of token ids, each assigned in the tokenizer's vocabulary.
std::vector<int32_t> parseIds(const std::string& text, const Tokenizer& tok) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw UsageError("--ids is not valid JSON (want a list of token ids, e.g. [1, 2, 3]): " + std::string(e.what()));
  }
  if (!j.is_array()) throw UsageError("--ids must be a JSON list of token ids, e.g. [1, 2, 3]");
  std::vector<int32_t> ids;
  const int64_t vocab = tok.vocabSize();
  for (const Json& x : j) {
    if (!x.is_number_integer())
      throw UsageError("--ids: " + x.dump() + " is not an integer token id");
    const int64_t id = x.get<int64_t>();
    if (id < 0 || id >= vocab || tok.idToToken(static_cast<int32_t>(id)).empty())
      throw UsageError("--ids: token id " + std::to_string(id) + " is outside the vocabulary (ids 0.." +
                       std::to_string(vocab - 1) + ")");
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::string dumpJson(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

// A wall clock that waits for the device first.
double now(const at::Tensor& sync_on = {}) {
  if (sync_on.defined()) (void)sync_on.sum().item<double>();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::vector<chat::Message>> conversationsOf(const Json& j) {
  std::vector<std::vector<chat::Message>> out;
  for (const auto& conv : j) {
    std::vector<chat::Message> messages;
    for (const auto& m : conv) messages.push_back(chat::messageFromJson(m));
    out.push_back(std::move(messages));
  }
  return out;
}

PolicyCommandResult encode(const PolicyCommand& c) {
  Tokenizer tok = Tokenizer::fromFile(c.tokenizer);
  if (!c.texts_file.empty()) {
    Json list = readUserJson(c.texts_file), out = Json::array();
    if (!list.is_array()) throw UsageError(c.texts_file + ": not a JSON list of texts");
    for (const auto& t : list) {
      if (!t.is_string()) throw UsageError(c.texts_file + ": " + t.dump() + " is not a text");
      out.push_back(tok.encode(t.get<std::string>(), !c.no_special));
    }
    return {.output = dumpJson(out), .output_path = c.out};
  }
  std::string text;
  if (!c.text_file.empty()) text = readText(c.text_file);
  else if (!c.text) throw UsageError("encode needs --text, --file or --texts");
  else text = *c.text;
  return {.output = dumpJson(Json{{"ids", tok.encode(text, !c.no_special)}}), .output_path = c.out};
}

PolicyCommandResult decode(const PolicyCommand& c) {
  Tokenizer tok = Tokenizer::fromFile(c.tokenizer);
  return {.output = tok.decode(parseIds(c.ids, tok), c.skip_special) + "\n"};
}

PolicyCommandResult renderChat(const PolicyCommand& c) {
  Tokenizer tok = Tokenizer::fromFile(c.tokenizer);
  const Json messages_json = readUserJson(c.messages_file);
  if (!messages_json.is_array()) throw UsageError(c.messages_file + ": not a JSON list of messages");
  std::vector<chat::Message> messages;
  for (const auto& m : messages_json) {
    try {
      messages.push_back(chat::messageFromJson(m));
    } catch (const Error& e) {
      throw UsageError(c.messages_file + ": " + e.what());
    }
  }
  Json tools = c.tools_file.empty() ? Json() : readUserJson(c.tools_file);
  const ChatTemplate tmpl = ChatTemplate::fromCheckpoint(c.tokenizer);
  ChatEncoding enc = tmpl.encode(tok, messages, tools, c.generation_prompt);
  return {.output = dumpJson(Json{{"text", tmpl.render(messages, tools, c.generation_prompt)},
                                  {"ids", enc.ids},
                                  {"loss_mask", enc.loss_mask},
                                  {"template", tmpl.familyName()}})};
}

PolicyCommandResult logits(const PolicyCommand& c) {
  c10::InferenceMode guard;
  Model m = loadModel(c.model_dir, {c.device, c.dtype});
  std::map<std::string, at::Tensor> in;
  for (auto& [name, t] : readTensors(c.inputs_file)) in[name] = t;
  if (!in.count("input_ids")) throw UsageError(c.inputs_file + ": no tensor 'input_ids'");
  at::Tensor mask = in.count("attention_mask") ? in["attention_mask"] : at::Tensor();
  at::Tensor out = m.forward(in["input_ids"], mask).to(at::kCPU, at::kFloat);
  writeTensors(c.out, {{"logits", out}});
  return {};
}

PolicyCommandResult generate(const PolicyCommand& c) {
  if (c.chat_file.empty() && c.prompts_file.empty()) throw UsageError("generate needs --prompts or --chat");
  if (!c.chat_file.empty())  // the checkpoint's chat template, before loading the weights
    if (const ChatTemplate t = ChatTemplate::fromCheckpoint(c.model_dir); t.unavailable) throw UsageError(*t.unavailable);
  LocalPolicyOptions o;
  o.model_dir = c.model_dir;
  o.device = c.device;
  o.dtype = c.dtype;
  o.max_batch_size = c.max_batch;
  auto policy = loadLocalPolicy(o);
  std::vector<Generation> out;
  bool is_chat = false;
  if (!c.chat_file.empty()) {
    Json j = readUserJson(c.chat_file);
    Json convs = j.is_object() ? j.value("conversations", Json::array()) : j;
    Json tools = j.is_object() ? j.value("tools", Json()) : Json();
    std::vector<std::vector<chat::Message>> conversations;
    try {
      conversations = conversationsOf(convs);
    } catch (const Error& e) {
      throw UsageError(c.chat_file + ": " + e.what());
    }
    out = policy->generateChat(conversations, tools, c.sampling);
    is_chat = true;
  } else {
    std::vector<std::vector<int32_t>> prompts;
    const Json list = readUserJson(c.prompts_file);
    if (!list.is_array()) throw UsageError(c.prompts_file + ": not a JSON list of prompts");
    for (const auto& p : list)
      prompts.push_back(p.is_string() ? policy->tokenizer().encode(p.get<std::string>(), false)
                                      : parseIds(p.dump(), policy->tokenizer()));
    out = policy->generate(prompts, c.sampling);
  }
  if (c.sampling.stop_requested && c.sampling.stop_requested()) return {.interrupted = true};
  std::string lines;
  for (size_t i = 0; i < out.size(); ++i) {
    Json line = {{"index", i}, {"token_ids", out[i].token_ids}, {"logprobs", out[i].logprobs},
                 {"text", out[i].text}, {"finish_reason", out[i].finish_reason}};
    if (is_chat) line["message"] = parsedMessageJson(parseAssistantMessage(out[i].text));
    lines += dumpJson(line);
  }
  return {.output = lines, .output_path = c.out};
}

PolicyCommandResult save(const PolicyCommand& c) {
  Model m = loadModel(c.model_dir, {"cpu", "auto"});
  SaveOptions o;
  o.dtype = c.save_dtype;
  o.max_shard_bytes = c.max_shard_mb * 1024 * 1024;
  o.copy_files_from = c.model_dir;
  saveModel(m, c.out, o);
  return {.note = "wrote " + c.out};
}

// Prefill and decode tokens/s, greedy with the KV cache, as generate runs them.
PolicyCommandResult bench(const PolicyCommand& c) {
  c10::InferenceMode guard;
  Model m;
  if (!c.model_dir.empty()) m = loadModel(c.model_dir, {c.device, c.dtype});
  else if (!c.config_file.empty()) m = randomModel(parseModelConfig(readJsonFile(c.config_file), c.config_file), {c.device, c.dtype});
  else throw UsageError("bench needs --model or --config");
  at::Tensor prompt = at::randint(0, m.config.vocab_size, {c.batch, c.prompt_len},
                                  at::TensorOptions().dtype(at::kLong)).to(m.device());
  chat::SamplingParams greedy;
  greedy.temperature = 0;
  at::Generator gen = makeGenerator(m.device(), 0);
  std::vector<double> prefill, decode;
  for (int64_t r = 0; r <= c.repeat; ++r) {
    // The same work as generateBatch: prefill into the cache, then one
    // token per step with the sampled ids copied to the host each step.
    KVCache cache = m.newCache(c.batch, c.prompt_len + c.new_tokens);
    double t0 = now(prompt);
    at::Tensor logits = m.forward(prompt, {}, &cache, /*last_only=*/true);
    double t1 = now(logits);
    for (int64_t s = 1; s < c.new_tokens; ++s) {
      SampledTokens next = sampleNext(logits, greedy, gen);
      (void)at::stack({next.tokens.to(at::kDouble), next.logprobs.to(at::kDouble)}).to(at::kCPU);
      logits = m.forward(next.tokens.unsqueeze(1), {}, &cache, /*last_only=*/true);
    }
    double t2 = now(logits);
    if (r == 0) continue;  // warm-up
    prefill.push_back(t1 - t0);
    decode.push_back(t2 - t1);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double tp = median(prefill), td = median(decode);
  Json j = {{"impl", "kbpolicy"}, {"device", m.device().str()}, {"dtype", torchDtypeName(m.dtype())},
            {"batch", c.batch}, {"prompt_len", c.prompt_len}, {"new_tokens", c.new_tokens},
            {"prefill_s", tp}, {"prefill_tokens_per_s", c.batch * c.prompt_len / tp},
            {"decode_s", td}, {"decode_tokens_per_s", c.batch * (c.new_tokens - 1) / td},
            {"repeat", c.repeat}};
  return {.output = dumpJson(j)};
}

}  // namespace

PolicyCommandResult runPolicyCommand(const PolicyCommand& c) {
  if (c.subcommand == "encode") return encode(c);
  if (c.subcommand == "decode") return decode(c);
  if (c.subcommand == "chat") return renderChat(c);
  if (c.subcommand == "logits") return logits(c);
  if (c.subcommand == "generate") return generate(c);
  if (c.subcommand == "save") return save(c);
  if (c.subcommand == "bench") return bench(c);
  throw UsageError("no such subcommand: " + c.subcommand);
}

}  // namespace kb::llm
