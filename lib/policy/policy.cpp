#include "policy/policy.h"

#include <algorithm>

namespace kb::policy {

std::vector<Completion> Policy::generateChat(const std::vector<std::vector<ChatMessage>>& conversations,
                                             const Json& tools, const SamplingParams& params) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& conversation : conversations)
    prompts.push_back(chatTemplate().encode(tokenizer(), conversation, tools, /*add_generation_prompt=*/true).ids);
  SamplingParams p = params;
  // The template's end of turn (<|im_end|>, <|eot_id|>, </s>) stops generation.
  const int32_t end_of_turn = tokenizer().tokenToId(chatTemplate().endOfTurn());
  if (p.stop_token_ids.empty()) p.stop_token_ids = defaultStopTokenIds();
  if (end_of_turn >= 0 &&
      std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), end_of_turn) == p.stop_token_ids.end())
    p.stop_token_ids.push_back(end_of_turn);
  return generate(prompts, p);
}

}  // namespace kb::policy
