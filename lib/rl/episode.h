// Trajectories (docs/trajectory-format.md) as token sequences for training.
//
// An Episode is one trajectory: its reward and one or more Sequences. A
// Sequence is token ids plus an action mask: mask[i] = 1 when ids[i] was
// produced by the policy (an assistant token, trained on), 0 for prompt,
// tool output and template tokens. mask[0] is always 0 (nothing predicts the
// first token). logprobs[i] is the rollout's log-probability of ids[i] where
// it was recorded (NaN elsewhere).
//
// Two ways to get the tokens (docs/kbtrain.md "From trajectories to tokens"):
//  - recorded: each turn's response.token_ids (and prompt_token_ids when
//    given, else the prompt re-encoded with the chat template) are exactly
//    what was sampled; a turn whose prompt extends the previous sequence is
//    appended to it, so a conversation without elision is one sequence;
//  - templated: the whole `messages` conversation encoded with the ChatML
//    template, the mask marking the assistant tokens (policy/chat_template.h).
//    Used when a turn lacks token ids (demonstrations, servers without ids).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "llm/chat_template.h"
#include "llm/tokenizer.h"

namespace kb::rl {

struct Sequence {
  std::vector<int32_t> ids;
  std::vector<uint8_t> mask;    // 1: action token
  std::vector<float> logprobs;  // recorded rollout log p(ids[i]); NaN when unknown
  size_t actionTokens() const;
};

struct Episode {
  std::string rollout_id;
  std::string task_id;
  std::optional<double> reward;  // reward.value; nullopt when excluded / absent
  bool passed = false;           // reward.correct, else status == "ok"
  std::string tokens_from;       // "recorded" or "template"
  bool truncated = false;        // a sequence was cut to max_length
  std::vector<Sequence> sequences;
  size_t actionTokens() const;
  size_t tokens() const;
};

struct EpisodeOptions {
  bool use_recorded_tokens = true;  // false: always re-encode with the template
  size_t max_length = 0;            // cut sequences longer than this (0: no limit)
};

// Reads every JSON object line of a JSONL file; a line that does not parse
// (e.g. the partial last line of an interrupted run) is counted in *skipped.
// Throws kb::UsageError when the file cannot be opened.
std::vector<Json> readJsonl(const std::filesystem::path& path, size_t* skipped = nullptr);

// The episode of one trajectory record. Throws kb::Error naming the rollout
// when the record has no messages.
Episode episodeFromTrajectory(const Json& trajectory, const llm::Tokenizer& tokenizer,
                              const llm::ChatTemplate& chat, const EpisodeOptions& options = {});

// The OpenAI "tools" array ({"type": "function", "function": {...}}) of a
// trajectory's `tools` field ({name, description, parameters}); null if none.
Json openAiTools(const Json& trajectory_tools);

// Messages [0, count) of a trajectory as the turn's prompt: the indices in
// `elided` replaced by the placeholder kbrollout sent.
std::vector<chat::Message> promptMessages(const Json& messages, size_t count, const Json& elided);

}  // namespace kb::rl
