#include "policy/policy.h"

#include <algorithm>

namespace kb::policy {

std::vector<Completion> Policy::generateChat(const std::vector<std::vector<ChatMessage>>& conversations,
                                             const Json& tools, const SamplingParams& params) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& conversation : conversations)
    prompts.push_back(chatTemplate().encode(tokenizer(), conversation, tools, /*add_generation_prompt=*/true).ids);
  SamplingParams p = params;
  const int32_t im_end = tokenizer().tokenToId("<|im_end|>");
  if (p.stop_token_ids.empty()) p.stop_token_ids = defaultStopTokenIds();
  if (im_end >= 0 &&
      std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), im_end) == p.stop_token_ids.end())
    p.stop_token_ids.push_back(im_end);
  return generate(prompts, p);
}

}  // namespace kb::policy
