// kbpolicy: the local policy from the command line -- tokenize, render chats,
// compute logits, generate, re-save checkpoints and benchmark. A thin driver
// over lib/policy; docs/policy-model.md documents each subcommand.
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "core/json.h"
#include "kb_config.h"
#include "policy/chat_template.h"
#include "policy/model.h"
#include "policy/policy.h"
#include "policy/sampler.h"
#include "policy/tokenizer.h"

namespace fs = std::filesystem;
using namespace kb;
using namespace kb::policy;

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeOut(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return;
  }
  tools::writeFileAtomic(path, text);  // a temporary file and a rename: never half a file
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

std::vector<std::vector<ChatMessage>> conversationsOf(const Json& j) {
  std::vector<std::vector<ChatMessage>> out;
  for (const auto& conv : j) {
    std::vector<ChatMessage> messages;
    for (const auto& m : conv) messages.push_back(chatMessageFromJson(m));
    out.push_back(std::move(messages));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kbpolicy " KB_VERSION " -- the local LibTorch policy: tokenizer, chat template, model"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kbpolicy ") + KB_VERSION, "Print the version and exit");
  const std::vector<std::string> kDtypes = {"auto", "float32", "bfloat16", "float16"};
  std::function<void()> run;
  int interrupted = 0;  // 128 + signal when generate was stopped

  // encode ------------------------------------------------------------------
  std::string tokenizer_path, text, texts_file, out_path;
  bool no_special = false;
  auto* encode = app.add_subcommand("encode", "Token ids of a text (--text), a file (--file) or a JSON list of texts (--texts)");
  encode->add_option("--tokenizer", tokenizer_path, "tokenizer.json or a model directory")->required();
  auto* text_opt = encode->add_option("--text", text, "the text");
  std::string text_file;
  encode->add_option("--file", text_file, "a file whose whole content is the text");
  encode->add_option("--texts", texts_file, "a JSON file holding a list of texts; prints a list of id lists");
  encode->add_flag("--no-special", no_special, "do not add the post-processor's special tokens (e.g. BOS)");
  encode->add_option("-o,--out", out_path, "write here instead of stdout");
  encode->callback([&] {
    run = [&] {
      tools::checkWritableFile(out_path, "--out");
      Tokenizer tok = Tokenizer::fromFile(tokenizer_path);
      if (!texts_file.empty()) {
        Json list = readUserJson(texts_file), out = Json::array();
        if (!list.is_array()) throw UsageError(texts_file + ": not a JSON list of texts");
        for (const auto& t : list) {
          if (!t.is_string()) throw UsageError(texts_file + ": " + t.dump() + " is not a text");
          out.push_back(tok.encode(t.get<std::string>(), !no_special));
        }
        writeOut(out_path, dumpJson(out));
        return;
      }
      if (!text_file.empty()) text = readText(text_file);
      else if (text_opt->count() == 0) throw UsageError("encode needs --text, --file or --texts");
      writeOut(out_path, dumpJson(Json{{"ids", tok.encode(text, !no_special)}}));
    };
  });

  // decode ------------------------------------------------------------------
  std::string ids_json;
  bool skip_special = false;
  auto* decode = app.add_subcommand("decode", "Text of token ids");
  decode->add_option("--tokenizer", tokenizer_path, "tokenizer.json or a model directory")->required();
  decode->add_option("--ids", ids_json, "a JSON list of ids, e.g. [1, 2, 3]")->required();
  decode->add_flag("--skip-special", skip_special, "leave special tokens out");
  decode->callback([&] {
    run = [&] {
      Tokenizer tok = Tokenizer::fromFile(tokenizer_path);
      std::cout << tok.decode(parseIds(ids_json, tok), skip_special) << "\n";
    };
  });

  // chat --------------------------------------------------------------------
  std::string messages_file, tools_file;
  bool generation_prompt = false;
  auto* chat = app.add_subcommand("chat", "Render a conversation with the checkpoint's chat template (ChatML, Llama 3 "
                                          "or Mistral): text, ids and loss mask");
  chat->add_option("--tokenizer", tokenizer_path,
                   "a model directory, or a tokenizer.json inside one; the chat template is that directory's "
                   "(chat_template.jinja or tokenizer_config.json's chat_template)")
      ->required();
  chat->add_option("--messages", messages_file, "a JSON list of {role, content, tool_calls} messages")->required();
  chat->add_option("--tools", tools_file, "a JSON list of tool schemas");
  chat->add_flag("--generation-prompt", generation_prompt, "end with the assistant's header (<|im_start|>assistant\\n in ChatML)");
  chat->callback([&] {
    run = [&] {
      Tokenizer tok = Tokenizer::fromFile(tokenizer_path);
      const Json messages_json = readUserJson(messages_file);
      if (!messages_json.is_array()) throw UsageError(messages_file + ": not a JSON list of messages");
      std::vector<ChatMessage> messages;
      for (const auto& m : messages_json) {
        try {
          messages.push_back(chatMessageFromJson(m));
        } catch (const Error& e) {
          throw UsageError(messages_file + ": " + e.what());
        }
      }
      Json tools = tools_file.empty() ? Json() : readUserJson(tools_file);
      const ChatTemplate tmpl = ChatTemplate::fromCheckpoint(tokenizer_path);
      ChatEncoding enc = tmpl.encode(tok, messages, tools, generation_prompt);
      writeOut("", dumpJson(Json{{"text", tmpl.render(messages, tools, generation_prompt)},
                                 {"ids", enc.ids},
                                 {"loss_mask", enc.loss_mask},
                                 {"template", tmpl.familyName()}}));
    };
  });

  // logits ------------------------------------------------------------------
  std::string model_dir, inputs_file, device = "cpu", dtype = "auto";
  auto* logits = app.add_subcommand("logits", "Logits (float32) of a batch: --inputs has input_ids [B, T] and attention_mask");
  logits->add_option("--model", model_dir, "model directory")->required();
  logits->add_option("--inputs", inputs_file, "safetensors with input_ids (int64) and optional attention_mask")->required();
  logits->add_option("-o,--out", out_path, "safetensors to write (tensor 'logits')")->required();
  logits->add_option("--device", device, "cpu, cuda or cuda:N")->check(tools::deviceValidator());
  logits->add_option("--dtype", dtype, "auto, float32, bfloat16 or float16")->check(CLI::IsMember(kDtypes));
  logits->callback([&] {
    run = [&] {
      tools::checkWritableFile(out_path, "--out");
      c10::InferenceMode guard;
      Model m = loadModel(model_dir, {device, dtype});
      std::map<std::string, at::Tensor> in;
      for (auto& [name, t] : readTensors(inputs_file)) in[name] = t;
      if (!in.count("input_ids")) throw UsageError(inputs_file + ": no tensor 'input_ids'");
      at::Tensor mask = in.count("attention_mask") ? in["attention_mask"] : at::Tensor();
      at::Tensor out = m.forward(in["input_ids"], mask).to(at::kCPU, at::kFloat);
      writeTensors(out_path, {{"logits", out}});
    };
  });

  // generate ----------------------------------------------------------------
  std::string prompts_file, chat_file;
  SamplingParams params;
  uint64_t seed = 0;
  bool have_seed = false;
  int64_t max_batch = 64;
  auto* generate = app.add_subcommand("generate", "Sample completions; prints one JSON line per prompt");
  generate->add_option("--model", model_dir, "model directory (config.json, *.safetensors, tokenizer.json)")->required();
  generate->add_option("--prompts", prompts_file, "JSON list of prompts: token id lists or strings");
  generate->add_option("--chat", chat_file, "JSON {\"conversations\": [[messages]...], \"tools\": [...]} or a list of conversations");
  generate->add_option("--max-new-tokens", params.max_new_tokens, "at least 1; default 256")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  generate->add_option("--temperature", params.temperature, "0 = greedy; default 1")->check(CLI::Range(0.0, 1e6));
  generate->add_option("--top-p", params.top_p, "in (0, 1]; default 1")->check(CLI::Range(1e-9, 1.0, "in (0, 1]"));
  generate->add_option("--top-k", params.top_k, "default 0 (off)")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  generate->add_option("--stop", params.stop_token_ids, "stop token ids (default: the model's eos ids)");
  auto* seed_opt = generate->add_option("--seed", seed, "random seed (default: fresh)");
  generate->add_option("--device", device, "cpu, cuda or cuda:N")->check(tools::deviceValidator());
  generate->add_option("--dtype", dtype, "auto, float32, bfloat16 or float16")->check(CLI::IsMember(kDtypes));
  generate->add_option("--max-batch", max_batch, "prompts per forward batch (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  generate->add_option("-o,--out", out_path, "write here instead of stdout");
  generate->callback([&] {
    run = [&] {
      tools::checkWritableFile(out_path, "--out");
      if (chat_file.empty() && prompts_file.empty()) throw UsageError("generate needs --prompts or --chat");
      if (!chat_file.empty())  // the checkpoint's chat template, before loading the weights
        if (const ChatTemplate t = ChatTemplate::fromCheckpoint(model_dir); t.unavailable) throw UsageError(*t.unavailable);
      have_seed = seed_opt->count() > 0;
      if (have_seed) params.seed = seed;
      // SIGINT / SIGTERM end the decoding loop; nothing is written then.
      tools::StopSignals signals;
      params.stop_requested = [] { return tools::StopSignals::stopRequested(); };
      LocalPolicyOptions o;
      o.model_dir = model_dir;
      o.device = device;
      o.dtype = dtype;
      o.max_batch_size = max_batch;
      auto policy = loadLocalPolicy(o);
      std::vector<Completion> out;
      bool is_chat = false;
      if (!chat_file.empty()) {
        Json j = readUserJson(chat_file);
        Json convs = j.is_object() ? j.value("conversations", Json::array()) : j;
        Json tools = j.is_object() ? j.value("tools", Json()) : Json();
        std::vector<std::vector<ChatMessage>> conversations;
        try {
          conversations = conversationsOf(convs);
        } catch (const Error& e) {
          throw UsageError(chat_file + ": " + e.what());
        }
        out = policy->generateChat(conversations, tools, params);
        is_chat = true;
      } else if (!prompts_file.empty()) {
        std::vector<std::vector<int32_t>> prompts;
        const Json list = readUserJson(prompts_file);
        if (!list.is_array()) throw UsageError(prompts_file + ": not a JSON list of prompts");
        for (const auto& p : list)
          prompts.push_back(p.is_string() ? policy->tokenizer().encode(p.get<std::string>(), false)
                                          : parseIds(p.dump(), policy->tokenizer()));
        out = policy->generate(prompts, params);
      } else {
        throw UsageError("generate needs --prompts or --chat");
      }
      if (tools::StopSignals::stopRequested()) {
        interrupted = tools::StopSignals::exitCode();
        tools::printError("kbpolicy", std::string("interrupted: generation stopped by ") +
                                          (tools::StopSignals::signal() == SIGTERM ? "SIGTERM" : "SIGINT") +
                                          ", nothing written; run the same command again");
        return;
      }
      std::string lines;
      for (size_t i = 0; i < out.size(); ++i) {
        Json line = {{"index", i}, {"token_ids", out[i].token_ids}, {"logprobs", out[i].logprobs},
                     {"text", out[i].text}, {"finish_reason", out[i].finish_reason}};
        if (is_chat) line["message"] = chatMessageToJson(parseAssistantMessage(out[i].text));
        lines += dumpJson(line);
      }
      writeOut(out_path, lines);
    };
  });

  // save --------------------------------------------------------------------
  std::string save_dtype;
  int64_t max_shard_mb = 5 * 1024;
  auto* save = app.add_subcommand("save", "Load a checkpoint and write it again (safetensors + config), as kbtrain does");
  save->add_option("--model", model_dir, "model directory")->required();
  save->add_option("-o,--out", out_path, "directory to write")->required();
  save->add_option("--dtype", save_dtype, "float32, bfloat16 or float16 (default: as loaded)")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  save->add_option("--max-shard-mb", max_shard_mb, "shard size limit in MiB (default 5120)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  save->callback([&] {
    run = [&] {
      tools::checkWritableDir(out_path, "--out");
      Model m = loadModel(model_dir, {"cpu", "auto"});
      SaveOptions o;
      o.dtype = save_dtype;
      o.max_shard_bytes = max_shard_mb * 1024 * 1024;
      o.copy_files_from = model_dir;
      saveModel(m, out_path, o);
      std::cerr << "kbpolicy: wrote " << out_path << "\n";
    };
  });

  // bench -------------------------------------------------------------------
  std::string config_file;
  int64_t batch = 16, prompt_len = 128, new_tokens = 128, repeat = 3;
  auto* bench = app.add_subcommand("bench", "Prefill and decode tokens/s (greedy, KV cache), as generate runs them");
  bench->add_option("--model", model_dir, "model directory (weights loaded)");
  bench->add_option("--config", config_file, "config.json only: random weights of that shape");
  bench->add_option("--batch", batch, "default 16")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  bench->add_option("--prompt-len", prompt_len, "default 128")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  bench->add_option("--new-tokens", new_tokens, "default 128")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  bench->add_option("--repeat", repeat, "timed repetitions after one warm-up (default 3)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  bench->add_option("--device", device, "cpu, cuda or cuda:N")->check(tools::deviceValidator());
  bench->add_option("--dtype", dtype, "auto, float32, bfloat16 or float16")->check(CLI::IsMember(kDtypes));
  bench->callback([&] {
    run = [&] {
      c10::InferenceMode guard;
      Model m;
      if (!model_dir.empty()) m = loadModel(model_dir, {device, dtype});
      else if (!config_file.empty()) m = randomModel(parseModelConfig(readJsonFile(config_file), config_file), {device, dtype});
      else throw UsageError("bench needs --model or --config");
      at::Tensor prompt = at::randint(0, m.config.vocab_size, {batch, prompt_len},
                                      at::TensorOptions().dtype(at::kLong)).to(m.device());
      SamplingParams greedy;
      greedy.temperature = 0;
      at::Generator gen = makeGenerator(m.device(), 0);
      std::vector<double> prefill, decode;
      for (int64_t r = 0; r <= repeat; ++r) {
        // The same work as generateBatch: prefill into the cache, then one
        // token per step with the sampled ids copied to the host each step.
        KVCache cache = m.newCache(batch, prompt_len + new_tokens);
        double t0 = now(prompt);
        at::Tensor logits = m.forward(prompt, {}, &cache, /*last_only=*/true);
        double t1 = now(logits);
        for (int64_t s = 1; s < new_tokens; ++s) {
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
                {"batch", batch}, {"prompt_len", prompt_len}, {"new_tokens", new_tokens},
                {"prefill_s", tp}, {"prefill_tokens_per_s", batch * prompt_len / tp},
                {"decode_s", td}, {"decode_tokens_per_s", batch * (new_tokens - 1) / td},
                {"repeat", repeat}};
      writeOut("", dumpJson(j));
    };
  });

  // Exit status (docs/cli.md): 0 done; 2 bad usage or bad input (flags,
  // files, ids, an unwritable --out; checked before the work); 1 a checkpoint
  // or file read and judged unusable (unsupported architecture, bad tensors);
  // 3 an infrastructure fault (torch, device).
  if (auto rc = tools::parseOrExit(app, argc, argv, "kbpolicy")) return *rc;
  try {
    if (run) run();
    if (interrupted) return interrupted;
  } catch (const UsageError& e) {
    tools::printError("kbpolicy", e.what());
    return tools::kExitUsage;
  } catch (const Json::exception& e) {
    tools::printError("kbpolicy", std::string("bad JSON input: ") + e.what());
    return tools::kExitUsage;
  } catch (const std::filesystem::filesystem_error& e) {
    // An input that does not exist or may not be read is the user's to fix.
    const auto c = e.code();
    if (c == std::errc::permission_denied || c == std::errc::no_such_file_or_directory ||
        c == std::errc::not_a_directory) {
      tools::printError("kbpolicy", e.what());
      return tools::kExitUsage;
    }
    tools::printError("kbpolicy", std::string("internal error: ") + e.what());
    return tools::kExitInfra;
  } catch (const Error& e) {
    tools::printError("kbpolicy", e.what());
    return tools::kExitFailed;
  } catch (const std::exception& e) {
    tools::printError("kbpolicy", std::string("internal error: ") + e.what());
    return tools::kExitInfra;
  }
  return 0;
}
