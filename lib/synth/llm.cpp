#include "synth/llm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <thread>

#ifdef KB_HAVE_CURL
#include "chat/client.h"
#endif

#include "synth/ops.h"

namespace kb::synth {

void llmOptionsFromEnv(LlmOptions& o, const std::string& key_env) {
  auto env = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v ? v : "";
  };
  if (o.base_url.empty()) o.base_url = env("OPENAI_BASE_URL");
  if (o.base_url.empty()) o.base_url = env("OPENAI_API_BASE");
  if (o.base_url.empty()) o.base_url = "http://127.0.0.1:8000/v1";
  while (!o.base_url.empty() && o.base_url.back() == '/') o.base_url.pop_back();
  if (o.model.empty()) o.model = env("OPENAI_MODEL");
  if (o.api_key.empty() && !key_env.empty()) o.api_key = env(key_env.c_str());
}

Json LlmSpend::json() const {
  return {{"requests", requests}, {"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

Json LlmResult::json() const {
  Json j = {{"attempts", attempts}, {"usage", usage.json()}, {"log", attempt_log}};
  if (!ok) {
    j["reason"] = reason;
    j["message"] = message;
  }
  return j;
}

std::string extractProgram(const std::string& content) {
  static const std::regex fence(R"(```[ \t]*(?:python|py|Python)?[ \t]*\r?\n([\s\S]*?)```)");
  std::smatch m;
  if (std::regex_search(content, m, fence)) return m[1].str();
  if (content.find("```") == std::string::npos) return content;
  return "";
}

std::string programProblem(const std::string& code) {
  if (code.find_first_not_of(" \t\r\n") == std::string::npos) return "no program in the reply";
  for (const char* need : {"class Model", "def forward", "def get_inputs", "def get_init_inputs"})
    if (code.find(need) == std::string::npos) return std::string("the program has no `") + need + "`";
  return "";
}

std::string llmSystemPrompt() {
  return "You write PyTorch reference programs in the KernelBench format. A program is one Python file with: "
         "`import torch`, `import torch.nn as nn` (and `torch.nn.functional as F` if used); `class Model(nn.Module)` "
         "whose `__init__` takes the sizes it needs and whose `forward` computes the task; module-level size "
         "constants; `get_inputs()` returning the list of forward inputs made with torch.randn/torch.rand; and "
         "`get_init_inputs()` returning the list of constructor arguments. Rules: float32 only; forward must be "
         "deterministic (no dropout, no random sampling, no torch.empty); no prints, files or network; shapes must "
         "fit so that the program runs as written. Reply with exactly one ```python fenced block and nothing else.";
}

std::string llmUserPrompt(const Composed& chain, const Catalog& catalog) {
  std::ostringstream s;
  s << "Fuse these " << chain.ops.size() << " operators, in this order, into one KernelBench program:\n";
  for (size_t i = 0; i < chain.steps.size(); ++i) {
    const Step& st = chain.steps[i];
    s << (i + 1) << ". " << st.op->name;
    std::string sig = st.op->entry.value("signature", "");
    if (!sig.empty()) s << " " << sig;
    s << "  (input " << shapeText(st.in) << " -> output " << shapeText(st.out) << ")\n";
  }
  s << "A first input of shape " << shapeText(chain.inputs.empty() ? Shape{} : chain.inputs[0])
    << " fits this chain; you may choose other sizes. Size the program so that one eager forward takes "
       "between 1 and 100 ms on an NVIDIA H100-class GPU. Extra tensors (a second matmul operand, a target) "
       "come from get_inputs; learned weights belong to the Model.\n";
  (void)catalog;
  return s.str();
}

// ---- the client ----------------------------------------------------------------

namespace {

struct HttpReply {
  long status = 0;          // 0: no HTTP reply
  std::string body;
  std::string transport;    // the transport error, when status is 0
  bool timed_out = false;
};

// One POST through lib/chat (libcurl).
HttpReply post(const LlmOptions& o, const std::string& body) {
  HttpReply r;
#ifdef KB_HAVE_CURL
  chat::Config c;
  c.base_url = o.base_url;
  c.api_key = o.api_key;
  c.timeout_seconds = o.timeout_s;
  c.connect_timeout_seconds = std::min(o.timeout_s, 30.0);
  chat::HttpReply h = chat::post(c, body);
  if (h.transport_ok) {
    r.status = h.status;
    r.body = std::move(h.body);
  } else {
    r.transport = h.transport_error;
    r.timed_out = h.timed_out;
  }
#else
  (void)o;
  (void)body;
  r.transport = "kbsynth was built without libcurl: the LLM composer is not available";
#endif
  return r;
}

std::string clip(const std::string& s, size_t n = 200) {
  std::string t = s.substr(0, n);
  std::replace(t.begin(), t.end(), '\n', ' ');
  return t;
}

}  // namespace

LlmClient::LlmClient(LlmOptions o) : o_(std::move(o)) {
#ifndef KB_HAVE_CURL
  throw LlmFatal("kbsynth was built without libcurl: the LLM composer is not available");
#endif
}

LlmClient::~LlmClient() = default;

void LlmClient::carryOver(const LlmSpend& s) {
  spent_.requests += s.requests;
  spent_.prompt_tokens += s.prompt_tokens;
  spent_.completion_tokens += s.completion_tokens;
}

bool LlmClient::withinBudget(std::string* why) const {
  int64_t total = spent_.prompt_tokens + spent_.completion_tokens;
  if (o_.budget_tokens > 0 && total + o_.max_tokens > o_.budget_tokens) {
    if (why) *why = "token budget: " + std::to_string(total) + " of " + std::to_string(o_.budget_tokens) +
                    " tokens spent, a request may take " + std::to_string(o_.max_tokens) + " more";
    return false;
  }
  if (o_.budget_usd > 0) {
    LlmSpend next = spent_;
    next.completion_tokens += o_.max_tokens;
    if (next.usd(o_) > o_.budget_usd) {
      if (why) *why = "dollar budget: $" + std::to_string(spent_.usd(o_)) + " of $" + std::to_string(o_.budget_usd) + " spent";
      return false;
    }
  }
  return true;
}

LlmResult LlmClient::completeProgram(const std::string& system, const std::string& user) {
  LlmResult res;
  Json req = {{"model", o_.model},
              {"messages", Json::array({{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}})},
              {"temperature", o_.temperature},
              {"max_tokens", o_.max_tokens}};
  std::string body = req.dump();
  std::string url = o_.base_url + "/chat/completions";
  for (int attempt = 1; attempt <= o_.max_attempts; ++attempt) {
    std::string why;
    if (!withinBudget(&why)) {
      res.reason = "budget_exhausted";
      res.message = why;
      return res;
    }
    if (attempt > 1) {
      double wait = std::min(30.0, o_.backoff_s * std::pow(2.0, attempt - 2));
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(wait * 1000)));
    }
    res.attempts = attempt;
    HttpReply r = post(o_, body);
    ++spent_.requests;
    ++res.usage.requests;
    Json log = {{"attempt", attempt}, {"http_status", r.status}};
    auto fail = [&](const std::string& outcome, const std::string& msg) {
      log["outcome"] = outcome;
      log["message"] = msg;
      res.attempt_log.push_back(log);
      res.message = outcome + ": " + msg;
    };
    if (r.status == 0) {
      fail(r.timed_out ? "timeout" : "transport_error", r.transport);
      continue;
    }
    if (r.status == 401 || r.status == 403 || r.status == 404) {
      fail("http_" + std::to_string(r.status), clip(r.body));
      throw LlmFatal("LLM endpoint " + url + " answered HTTP " + std::to_string(r.status) + ": " + clip(r.body) +
                     (r.status == 404 ? " (check --llm-url and --llm-model)" : " (check the API key)"));
    }
    if (r.status == 429 || r.status >= 500) {
      fail("http_" + std::to_string(r.status), clip(r.body));
      continue;
    }
    if (r.status != 200) {  // 400 and the like: the request itself is refused; retrying will not help
      fail("http_" + std::to_string(r.status), clip(r.body));
      res.reason = "bad_request";
      return res;
    }
    std::string content;
    int64_t pt = static_cast<int64_t>(body.size() / 4), ct = 0;
#ifdef KB_HAVE_CURL
    try {
      chat::Completion reply = chat::parseCompletion(r.body);
      if (!reply.has_content) throw chat::BadReply("no choices[0].message.content");
      content = reply.content;
      // Usage as reported, else estimated at 4 characters a token.
      ct = static_cast<int64_t>(content.size() / 4);
      if (reply.prompt_tokens >= 0) pt = reply.prompt_tokens;
      if (reply.completion_tokens >= 0) ct = reply.completion_tokens;
    } catch (const chat::BadReply&) {
      fail("malformed_reply", "not a chat completion: " + clip(r.body, 120));
      continue;
    }
#endif
    spent_.prompt_tokens += pt;
    spent_.completion_tokens += ct;
    res.usage.prompt_tokens += pt;
    res.usage.completion_tokens += ct;
    std::string code = extractProgram(content);
    std::string problem = programProblem(code);
    if (!problem.empty()) {
      fail("no_program", problem);
      continue;
    }
    log["outcome"] = "ok";
    res.attempt_log.push_back(log);
    res.ok = true;
    res.code = code;
    if (res.code.empty() || res.code.back() != '\n') res.code += '\n';
    res.message.clear();
    return res;
  }
  res.reason = "retries_exhausted";
  res.message = "no program after " + std::to_string(o_.max_attempts) + " attempts; last: " + res.message;
  return res;
}

}  // namespace kb::synth
