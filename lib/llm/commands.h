// kbpolicy's subcommands (docs/policy-model.md) as one library call: the
// driver (tools/kbpolicy/main.cpp) parses the flags into a PolicyCommand and
// writes what runPolicyCommand returns. LibTorch side (kb_llm).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "chat/messages.h"

namespace kb::llm {

struct PolicyCommand {
  std::string subcommand;  // encode, decode, chat, logits, generate, save, bench
  // encode, decode, chat
  std::string tokenizer;               // tokenizer.json or a model directory
  std::optional<std::string> text;     // encode --text
  std::string text_file, texts_file;   // encode --file, --texts
  bool no_special = false;             // encode: no post-processor special tokens
  std::string ids;                     // decode --ids: a JSON list of token ids
  bool skip_special = false;           // decode
  std::string messages_file, tools_file;  // chat
  bool generation_prompt = false;         // chat
  // logits, generate, save, bench
  std::string model_dir, inputs_file;
  std::string out;                     // --out: encode/generate output, logits safetensors, save directory
  std::string device = "cpu", dtype = "auto";
  std::string prompts_file, chat_file;  // generate
  chat::SamplingParams sampling = defaultSampling();  // generate (stop_requested: the caller's signals)
  int64_t max_batch = 64;
  std::string save_dtype;              // save: "" keeps the loaded dtype
  int64_t max_shard_mb = 5 * 1024;
  std::string config_file;             // bench --config: random weights of that shape
  int64_t batch = 16, prompt_len = 128, new_tokens = 128, repeat = 3;

  static chat::SamplingParams defaultSampling() {
    chat::SamplingParams s;
    s.max_tokens = 256;
    return s;
  }
};

struct PolicyCommandResult {
  std::string output{};       // what the subcommand prints ...
  std::string output_path{};  // ... to this file ("" or "-": stdout)
  std::string note{};         // a line for stderr ("wrote DIR"), "" for none
  bool interrupted = false;  // generate: sampling.stop_requested said stop; nothing to write
};

// Runs one subcommand. Throws kb::UsageError for bad usage or input (exit 2),
// kb::Error for a checkpoint or file judged unusable (exit 1), anything else
// for an infrastructure fault (exit 3).
PolicyCommandResult runPolicyCommand(const PolicyCommand& c);

}  // namespace kb::llm
