// A task family small enough for a tiny policy to learn in minutes, used by
// the end-to-end learning run (scripts/gpu/validate-train.sh learn,
// docs/kbtrain.md "The toy task family"). Not a substitute for the real
// environment: the reward comes from evaluating the answer's expression here,
// not from building and verifying CUDA (kbcheck).
//
// Task `seed`: an elementwise chain of 1-3 ops (scale, shift, relu, negate)
// given as PyTorch, e.g. "y = torch.relu(x * 3.0) + 2.0". The answer is a
// CUDA kernel whose body line is "if (i < n) y[i] = <C expression of x[i]>;".
// Reward: +1 when the expression computes the reference on 16 probe inputs
// (|diff| <= 1e-4 (1 + |ref|)), -1 otherwise (no kernel line, unparsable,
// wrong), as the paper's -1 for a failed check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/json.h"

namespace kb::toy {

struct ToyTask {
  uint64_t seed = 0;
  std::string id;          // "toy-<seed>"
  std::string torch_expr;  // "torch.relu(x * 3.0) + 2.0"
  std::string c_expr;      // "fmaxf(x[i] * 3.0f, 0.0f) + 2.0f"
  double apply(double x) const;  // the reference
};

ToyTask makeToyTask(uint64_t seed);

// The conversation's system and user messages (OpenAI layout).
Json toyPromptMessages(const ToyTask& task);
// The reference answer (the demonstration's assistant text).
std::string toyDemonstration(const ToyTask& task);

struct ToyScore {
  double reward = -1;
  bool correct = false;
  std::string reason;  // "ok", "no_kernel_line", "parse_error: ...", "wrong_value"
};
ToyScore scoreToyAnswer(const ToyTask& task, const std::string& answer);

// Evaluates a C expression over x[i] (numbers with an optional f suffix,
// x[i], + - * /, unary minus, parentheses, fmaxf, fminf); nullopt when it
// does not parse.
std::optional<double> evalCExpression(const std::string& expr, double x, std::string* error = nullptr);

// A hand-made trajectory record (docs/trajectory-format.md subset:
// identity, messages, one turn, final, reward) for one answer of `task`,
// scored by scoreToyAnswer: a fixture for tests that need no rollout loop.
// kbtrain's toy commands write theirs through the loop (episode.h).
Json toyTrajectory(const ToyTask& task, int sample, const std::string& answer, const Json& response,
                   const std::string& mode);

}  // namespace kb::toy
