#include "toy/task.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/report.h"

namespace kb::toy {

namespace {

struct Op {
  int kind;  // 0 scale, 1 shift, 2 relu, 3 negate
  int c;
};

std::string num(int c, bool f) { return std::to_string(c) + (f ? ".0f" : ".0"); }

bool isAtom(const std::string& e) { return e == "x" || e == "x[i]" || e.find(' ') == std::string::npos; }

}  // namespace

ToyTask makeToyTask(uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 12345);
  const int n = 1 + static_cast<int>(rng() % 3);
  std::string t = "x", c = "x[i]";
  ToyTask task;
  task.seed = seed;
  task.id = "toy-" + std::to_string(seed);
  std::vector<Op> ops;
  for (int k = 0; k < n; ++k) {
    Op op{static_cast<int>(rng() % 4), 2 + static_cast<int>(rng() % 8)};
    if (!ops.empty() && ops.back().kind == op.kind && (op.kind == 2 || op.kind == 3)) op.kind = 0;
    ops.push_back(op);
    switch (op.kind) {
      case 0:
        t = (isAtom(t) ? t : "(" + t + ")") + " * " + num(op.c, false);
        c = (isAtom(c) ? c : "(" + c + ")") + " * " + num(op.c, true);
        break;
      case 1:
        t = t + " + " + num(op.c, false);
        c = c + " + " + num(op.c, true);
        break;
      case 2:
        t = "torch.relu(" + t + ")";
        c = "fmaxf(" + c + ", 0.0f)";
        break;
      default:
        t = "-(" + t + ")";
        c = "-(" + c + ")";
        break;
    }
  }
  task.torch_expr = t;
  task.c_expr = c;
  return task;
}

double ToyTask::apply(double x) const {
  // Evaluate the C form of the reference: one evaluator for both sides.
  return *evalCExpression(c_expr, x);
}

Json toyPromptMessages(const ToyTask& task) {
  return Json::array(
      {{{"role", "system"}, {"content", "You write CUDA kernels. Answer with the kernel only."}},
       {{"role", "user"},
        {"content", "Write an elementwise CUDA kernel for y = " + task.torch_expr + " over float arrays of length n."}}});
}

std::string toyDemonstration(const ToyTask& task) {
  return "__global__ void k(const float* x, float* y, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) y[i] = " + task.c_expr + ";\n}";
}

// ---------------------------------------------------------------------------
// A small recursive-descent evaluator.

namespace {

struct Parser {
  const std::string& s;
  size_t p = 0;
  double x = 0;
  std::string error;

  void ws() {
    while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
  }
  bool eat(const std::string& tok) {
    ws();
    if (s.compare(p, tok.size(), tok) == 0) {
      p += tok.size();
      return true;
    }
    return false;
  }
  bool fail(const std::string& why) {
    if (error.empty()) error = why + " at " + std::to_string(p);
    return false;
  }
  bool expr(double& v) {
    if (!term(v)) return false;
    for (;;) {
      double r;
      if (eat("+")) {
        if (!term(r)) return false;
        v += r;
      } else if (eat("-")) {
        if (!term(r)) return false;
        v -= r;
      } else {
        return true;
      }
    }
  }
  bool term(double& v) {
    if (!unary(v)) return false;
    for (;;) {
      double r;
      if (eat("*")) {
        if (!unary(r)) return false;
        v *= r;
      } else if (eat("/")) {
        if (!unary(r)) return false;
        v /= r;
      } else {
        return true;
      }
    }
  }
  bool unary(double& v) {
    if (eat("-")) {
      if (!unary(v)) return false;
      v = -v;
      return true;
    }
    return primary(v);
  }
  bool call(double& v, bool is_max) {
    double a, b;
    if (!eat("(") || !expr(a) || !eat(",") || !expr(b) || !eat(")")) return fail("bad call");
    v = is_max ? std::fmax(a, b) : std::fmin(a, b);
    return true;
  }
  bool primary(double& v) {
    ws();
    if (eat("(")) {
      if (!expr(v)) return false;
      return eat(")") ? true : fail("expected )");
    }
    if (eat("x[i]")) {
      v = x;
      return true;
    }
    if (eat("fmaxf")) return call(v, true);
    if (eat("fminf")) return call(v, false);
    size_t q = p;
    while (q < s.size() && (std::isdigit(static_cast<unsigned char>(s[q])) || s[q] == '.')) ++q;
    if (q == p) return fail("expected a value");
    v = std::atof(s.substr(p, q - p).c_str());
    p = q;
    if (p < s.size() && (s[p] == 'f' || s[p] == 'F')) ++p;
    return true;
  }
};

}  // namespace

std::optional<double> evalCExpression(const std::string& expr, double x, std::string* error) {
  Parser ps{expr, 0, 0, {}};
  ps.x = x;
  double v = 0;
  if (!ps.expr(v)) {
    if (error) *error = ps.error;
    return std::nullopt;
  }
  ps.ws();
  if (ps.p != expr.size()) {
    if (error) *error = "trailing text at " + std::to_string(ps.p);
    return std::nullopt;
  }
  return v;
}

ToyScore scoreToyAnswer(const ToyTask& task, const std::string& answer) {
  ToyScore s;
  const std::string key = "y[i] =";
  size_t a = answer.find(key);
  size_t b = a == std::string::npos ? a : answer.find(';', a);
  if (a == std::string::npos || b == std::string::npos) {
    s.reason = "no_kernel_line";
    return s;
  }
  const std::string expr = answer.substr(a + key.size(), b - a - key.size());
  for (int k = 0; k < 16; ++k) {
    const double x = -4.0 + 0.53 * k;
    std::string err;
    std::optional<double> got = evalCExpression(expr, x, &err);
    if (!got) {
      s.reason = "parse_error: " + err;
      return s;
    }
    const double want = task.apply(x);
    if (!(std::fabs(*got - want) <= 1e-4 * (1 + std::fabs(want)))) {
      s.reason = "wrong_value";
      return s;
    }
  }
  s.reward = 1;
  s.correct = true;
  s.reason = "ok";
  return s;
}

Json toyTrajectory(const ToyTask& task, int sample, const std::string& answer, const Json& response,
                   const std::string& mode) {
  const ToyScore score = scoreToyAnswer(task, answer);
  Json messages = toyPromptMessages(task);
  messages.push_back({{"role", "assistant"}, {"content", answer}});
  Json t;
  t["format"] = "kb-trajectory";
  t["format_version"] = 1;
  t["tool"] = "kbtrain-toy";
  t["rollout_id"] = task.id + "#" + std::to_string(sample);
  t["task_id"] = task.id;
  t["sample"] = sample;
  t["mode"] = mode;
  t["started_at"] = nowIso8601();
  t["end"] = {{"reason", "finish"}, {"message", ""}, {"turns", 1}};
  t["tools"] = Json::array();
  t["messages"] = messages;
  Json turn = {{"turn", 0}, {"prompt_messages", 2}, {"elided", Json::array()}};
  Json r = response.is_object() ? response : Json::object();
  r["content"] = answer;
  r["tool_calls"] = Json::array();
  if (!r.contains("finish_reason")) r["finish_reason"] = "stop";
  turn["response"] = r;
  turn["observations"] = Json::array();
  t["turns"] = Json::array({turn});
  t["status"] = score.correct ? "ok" : "incorrect";
  t["final"] = {{"status", t["status"]}, {"check", score.reason}};
  t["reward"] = {{"scheme", {{"name", "toy"}}}, {"value", score.reward}, {"excluded", nullptr},
                 {"correct", score.correct}};
  t["finished_at"] = nowIso8601();
  return t;
}

}  // namespace kb::toy
