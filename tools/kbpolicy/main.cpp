// kbpolicy: the local policy from the command line -- tokenize, render chats,
// compute logits, generate, re-save checkpoints and benchmark. A thin driver
// over lib/llm (runPolicyCommand, llm/commands.h); docs/policy-model.md
// documents each subcommand.
#include <csignal>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "core/json.h"
#include "kb_config.h"
#include "llm/commands.h"

using namespace kb;
using namespace kb::llm;

namespace {

void writeOut(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return;
  }
  tools::writeFileAtomic(path, text);  // a temporary file and a rename: never half a file
}

// Exit status (docs/cli.md): 0 done; 2 bad usage or bad input (flags,
// files, ids, an unwritable --out; checked before the work); 1 a checkpoint
// or file read and judged unusable (unsupported architecture, bad tensors);
// 3 an infrastructure fault (torch, device); 128 + signal when generate was
// stopped (nothing written).
//
// json: --json FILE (encode, chat, generate, bench): the subcommand's JSON
// there, an indented document (generate: its JSON lines), "-": stdout.
int run(PolicyCommand& c, const std::string& json) {
  if (!json.empty()) {
    if (!c.out.empty()) throw UsageError("--json FILE and --out FILE both name the output; give one");
    tools::checkWritableFile(json, "--json");
  }
  if (c.subcommand == "encode" || c.subcommand == "logits" || c.subcommand == "generate")
    tools::checkWritableFile(c.out, "--out");
  if (c.subcommand == "save") tools::checkWritableDir(c.out, "--out");
  std::optional<tools::StopSignals> signals;  // SIGINT / SIGTERM end generate's decoding loop
  if (c.subcommand == "generate") {
    signals.emplace();
    c.sampling.stop_requested = [] { return tools::StopSignals::stopRequested(); };
  }
  PolicyCommandResult r = runPolicyCommand(c);
  if (r.interrupted) {
    tools::printError("kbpolicy", std::string("interrupted: generation stopped by ") +
                                      (tools::StopSignals::signal() == SIGTERM ? "SIGTERM" : "SIGINT") +
                                      ", nothing written; run the same command again");
    return tools::StopSignals::exitCode();
  }
  if (!json.empty() && json != "-" && c.subcommand != "generate")
    tools::writeJsonOutput(json, Json::parse(r.output));  // one JSON document, indented in a file
  else if (!r.output.empty())
    writeOut(json.empty() ? r.output_path : json, r.output);
  if (!r.note.empty()) std::cerr << "kbpolicy: " << r.note << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kbpolicy " KB_VERSION " -- the local LibTorch policy: tokenizer, chat template, model"};
  app.require_subcommand(1);
  tools::setVersionFlag(app, "kbpolicy");
  const std::vector<std::string> kDtypes = {"auto", "float32", "bfloat16", "float16"};
  PolicyCommand c;
  std::string text;

  auto* encode = app.add_subcommand("encode", "Token ids of a text (--text), a file (--file) or a JSON list of texts (--texts)");
  encode->add_option("--tokenizer", c.tokenizer, "tokenizer.json or a model directory")->required();
  auto* text_opt = encode->add_option("--text", text, "the text");
  encode->add_option("--file", c.text_file, "a file whose whole content is the text");
  encode->add_option("--texts", c.texts_file, "a JSON file holding a list of texts; prints a list of id lists");
  encode->add_flag("--no-special", c.no_special, "do not add the post-processor's special tokens (e.g. BOS)");
  encode->add_option("-o,--out", c.out, "write here instead of stdout");

  auto* decode = app.add_subcommand("decode", "Text of token ids");
  decode->add_option("--tokenizer", c.tokenizer, "tokenizer.json or a model directory")->required();
  decode->add_option("--ids", c.ids, "a JSON list of ids, e.g. [1, 2, 3]")->required();
  decode->add_flag("--skip-special", c.skip_special, "leave special tokens out");

  auto* chat = app.add_subcommand("chat", "Render a conversation with the checkpoint's chat template (ChatML, Llama 3 "
                                          "or Mistral): text, ids and loss mask");
  chat->add_option("--tokenizer", c.tokenizer,
                   "a model directory, or a tokenizer.json inside one; the chat template is that directory's "
                   "(chat_template.jinja or tokenizer_config.json's chat_template)")
      ->required();
  chat->add_option("--messages", c.messages_file, "a JSON list of {role, content, tool_calls} messages")->required();
  chat->add_option("--tools", c.tools_file, "a JSON list of tool schemas");
  chat->add_flag("--generation-prompt", c.generation_prompt, "end with the assistant's header (<|im_start|>assistant\\n in ChatML)");

  auto* logits = app.add_subcommand("logits", "Logits (float32) of a batch: --inputs has input_ids [B, T] and attention_mask");
  logits->add_option("--model", c.model_dir, "model directory")->required();
  logits->add_option("--inputs", c.inputs_file, "safetensors with input_ids (int64) and optional attention_mask")->required();
  logits->add_option("-o,--out", c.out, "safetensors to write (tensor 'logits')")->required();
  logits->add_option("--device", c.device, "cpu, cuda or cuda:N")->check(tools::deviceValidator());
  logits->add_option("--dtype", c.dtype, "auto, float32, bfloat16 or float16")->check(CLI::IsMember(kDtypes));

  uint64_t seed = 0;
  auto* generate = app.add_subcommand("generate", "Sample completions; prints one JSON line per prompt");
  generate->add_option("--model", c.model_dir, "model directory (config.json, *.safetensors, tokenizer.json)")->required();
  generate->add_option("--prompts", c.prompts_file, "JSON list of prompts: token id lists or strings");
  generate->add_option("--chat", c.chat_file, "JSON {\"conversations\": [[messages]...], \"tools\": [...]} or a list of conversations");
  generate->add_option("--max-new-tokens", c.sampling.max_tokens, "at least 1; default 256")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  generate->add_option("--temperature", c.sampling.temperature, "0 = greedy; default 1")->check(CLI::Range(0.0, 1e6));
  generate->add_option("--top-p", c.sampling.top_p, "in (0, 1]; default 1")->check(CLI::Range(1e-9, 1.0, "in (0, 1]"));
  generate->add_option("--top-k", c.sampling.top_k, "default 0 (off)")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  generate->add_option("--stop", c.sampling.stop_token_ids, "stop token ids (default: the model's eos ids)");
  auto* seed_opt = generate->add_option("--seed", seed, "random seed (default: fresh)");
  generate->add_option("--device", c.device, "cpu, cuda or cuda:N")->check(tools::deviceValidator());
  generate->add_option("--dtype", c.dtype, "auto, float32, bfloat16 or float16")->check(CLI::IsMember(kDtypes));
  generate->add_option("--max-batch", c.max_batch, "prompts per forward batch (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  generate->add_option("-o,--out", c.out, "write here instead of stdout");

  auto* save = app.add_subcommand("save", "Load a checkpoint and write it again (safetensors + config), as kbtrain does");
  save->add_option("--model", c.model_dir, "model directory")->required();
  save->add_option("-o,--out", c.out, "directory to write")->required();
  save->add_option("--dtype", c.save_dtype, "float32, bfloat16 or float16 (default: as loaded)")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  save->add_option("--max-shard-mb", c.max_shard_mb, "shard size limit in MiB (default 5120)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));

  auto* bench = app.add_subcommand("bench", "Prefill and decode tokens/s (greedy, KV cache), as generate runs them");
  bench->add_option("--model", c.model_dir, "model directory (weights loaded)");
  bench->add_option("--config", c.config_file, "config.json only: random weights of that shape");
  bench->add_option("--batch", c.batch, "default 16")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  bench->add_option("--prompt-len", c.prompt_len, "default 128")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  bench->add_option("--new-tokens", c.new_tokens, "default 128")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  bench->add_option("--repeat", c.repeat, "timed repetitions after one warm-up (default 3)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  bench->add_option("--device", c.device, "cpu, cuda or cuda:N")->check(tools::deviceValidator());
  bench->add_option("--dtype", c.dtype, "auto, float32, bfloat16 or float16")->check(CLI::IsMember(kDtypes));

  // --json FILE (docs/cli.md) where the subcommand prints JSON; the others
  // refuse it with one line.
  std::string json;
  for (CLI::App* sub : {encode, chat, generate, bench})
    sub->add_option("--json", json,
                    sub == generate ? "write the JSON lines to FILE instead of stdout ('-': stdout); as --out"
                                    : "write the JSON to FILE (indented) instead of stdout ('-': one line on stdout)")
        ->type_name("FILE");
  tools::refuseJsonFlag(decode, "decode prints text and has no JSON report");
  tools::refuseJsonFlag(logits, "logits writes safetensors (--out) and has no JSON report");
  tools::refuseJsonFlag(save, "save writes a checkpoint (--out) and has no JSON report");

  if (auto rc = tools::parseOrExit(app, argc, argv, "kbpolicy")) return *rc;
  for (CLI::App* sub : app.get_subcommands()) c.subcommand = sub->get_name();
  if (text_opt->count() > 0) c.text = text;
  if (seed_opt->count() > 0) c.sampling.seed = seed;
  try {
    return run(c, json);
  } catch (const UsageError& e) {
    tools::printError("kbpolicy", e.what());
    return tools::kExitUsage;
  } catch (const Json::exception& e) {
    tools::printError("kbpolicy", std::string("bad JSON input: ") + e.what());
    return tools::kExitUsage;
  } catch (const std::filesystem::filesystem_error& e) {
    // An input that does not exist or may not be read is the user's to fix.
    const auto code = e.code();
    if (code == std::errc::permission_denied || code == std::errc::no_such_file_or_directory ||
        code == std::errc::not_a_directory) {
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
}
