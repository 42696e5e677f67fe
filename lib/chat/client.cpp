#include "chat/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

namespace kb::chat {
namespace {

std::atomic<bool> g_stop{false};

int abortOnStop(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return g_stop.load() ? 1 : 0; }

void initCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t appendBody(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  // A response larger than 64 MiB is not a chat completion.
  if (out->size() + size * n > (64u << 20)) return 0;
  out->append(data, size * n);
  return size * n;
}

size_t readHeader(char* data, size_t size, size_t n, void* user) {
  auto* retry_after = static_cast<double*>(user);
  std::string line(data, size * n);
  static const std::string key = "retry-after:";
  if (line.size() > key.size()) {
    std::string lower;
    for (size_t i = 0; i < key.size(); ++i) lower.push_back(static_cast<char>(std::tolower(line[i])));
    if (lower == key) {
      char* end = nullptr;
      double v = std::strtod(line.c_str() + key.size(), &end);
      if (end != line.c_str() + key.size() && v >= 0) *retry_after = v;
    }
  }
  return size * n;
}

// "token_id:123" (vLLM's return_tokens_as_token_ids) -> 123, else -1.
int64_t tokenIdFromText(const std::string& t) {
  static const std::string prefix = "token_id:";
  if (t.rfind(prefix, 0) != 0) return -1;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str() + prefix.size(), &end, 10);
  return (end && *end == '\0' && end != t.c_str() + prefix.size()) ? v : -1;
}

std::vector<int64_t> intArray(const Json& j) {
  std::vector<int64_t> out;
  if (!j.is_array()) return out;
  for (const Json& v : j)
    if (v.is_number_integer() || v.is_number_unsigned()) out.push_back(v.get<int64_t>());
  return out;
}

}  // namespace

void requestStop() { g_stop.store(true); }
bool stopRequested() { return g_stop.load(); }

std::string snippet(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

HttpReply post(const Config& c, const std::string& body) {
  initCurlOnce();
  HttpReply r;
  CURL* curl = curl_easy_init();
  if (!curl) {
    r.transport_ok = false;
    r.transport_error = "curl_easy_init failed";
    return r;
  }
  const std::string url = c.base_url + "/chat/completions";
  char err[CURL_ERROR_SIZE] = {0};
  struct curl_slist* list = nullptr;
  list = curl_slist_append(list, "Content-Type: application/json");
  list = curl_slist_append(list, "Accept: application/json");
  if (!c.api_key.empty()) list = curl_slist_append(list, ("Authorization: Bearer " + c.api_key).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, appendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, readHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r.retry_after);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(c.timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(c.connect_timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, abortOnStop);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    r.transport_ok = false;
    r.transport_error = err[0] ? err : curl_easy_strerror(rc);
    r.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    r.url_unusable = rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return r;
}

Completion parseCompletion(const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error&) {
    throw BadReply("response is not JSON: " + snippet(text, 120));
  }
  if (!j.is_object()) throw BadReply("response is not a JSON object");
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) throw BadReply("server error: " + snippet(e->dump()));
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object())
    throw BadReply("response has no choices[0]");
  const Json& choice = (*choices)[0];
  auto msg = choice.find("message");
  if (msg == choice.end() || !msg->is_object()) throw BadReply("response has no choices[0].message");

  Completion r;
  if (auto c = msg->find("content"); c != msg->end() && c->is_string()) {
    r.content = *c;
    r.has_content = true;
  }
  for (const char* key : {"reasoning_content", "reasoning"})
    if (auto c = msg->find(key); c != msg->end() && c->is_string()) r.reasoning = *c;
  if (auto calls = msg->find("tool_calls"); calls != msg->end() && calls->is_array()) {
    int n = 0;
    for (const Json& call : *calls) {
      ++n;
      if (!call.is_object()) throw BadReply("tool_calls entry is not an object");
      ToolCall tc;
      if (auto id = call.find("id"); id != call.end() && id->is_string()) tc.id = *id;
      if (tc.id.empty()) tc.id = "call_" + std::to_string(n);
      auto fn = call.find("function");
      if (fn == call.end() || !fn->is_object()) throw BadReply("tool_calls entry has no function");
      if (auto name = fn->find("name"); name != fn->end() && name->is_string()) tc.name = *name;
      if (auto args = fn->find("arguments"); args != fn->end()) {
        // The spec says a string; some servers send the object itself.
        tc.arguments = args->is_string() ? args->get<std::string>() : args->dump();
      }
      r.tool_calls.push_back(std::move(tc));
    }
  }
  if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) r.finish_reason = *f;
  if (auto id = j.find("id"); id != j.end() && id->is_string()) r.response_id = *id;
  if (auto m = j.find("model"); m != j.end() && m->is_string()) r.model = *m;
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number()) r.prompt_tokens = *p;
    if (auto p = u->find("completion_tokens"); p != u->end() && p->is_number()) r.completion_tokens = *p;
  }
  // Token ids: vLLM's return_token_ids puts them on the choice (token_ids)
  // and the prompt's at the top (prompt_token_ids); accept either place.
  if (auto t = choice.find("token_ids"); t != choice.end()) r.token_ids = intArray(*t);
  for (const Json* where : {&choice, static_cast<const Json*>(&j)})
    if (auto t = where->find("prompt_token_ids"); t != where->end() && r.prompt_token_ids.empty())
      r.prompt_token_ids = intArray(*t);
  // Log-probabilities: choices[0].logprobs.content[] = {token, logprob, ...};
  // a token of the form "token_id:N" carries its id.
  if (auto lp = choice.find("logprobs"); lp != choice.end() && lp->is_object()) {
    if (auto content = lp->find("content"); content != lp->end() && content->is_array()) {
      std::vector<int64_t> ids;
      bool all_ids = true;
      for (const Json& tok : *content) {
        double v = NAN;
        if (auto x = tok.find("logprob"); x != tok.end() && x->is_number()) v = *x;
        r.logprobs.push_back(v);
        int64_t id = -1;
        if (auto t = tok.find("token"); t != tok.end() && t->is_string()) id = tokenIdFromText(*t);
        if (auto t = tok.find("token_id"); t != tok.end() && t->is_number_integer()) id = *t;
        if (id < 0) all_ids = false;
        ids.push_back(id);
      }
      if (r.token_ids.empty() && all_ids && !ids.empty()) r.token_ids = std::move(ids);
    }
  }
  return r;
}

Completion complete(const Config& config, const std::string& body) {
  const auto start = std::chrono::steady_clock::now();
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::vector<std::string> errors;
  double backoff = config.backoff_initial_seconds;
  const int max_attempts = std::max(1, config.max_attempts);

  for (int attempt = 1;; ++attempt) {
    HttpReply reply = post(config, body);
    std::string error;
    bool retryable = true;
    double wait = backoff;
    if (!reply.transport_ok) {
      error = "transport: " + reply.transport_error;
      retryable = !reply.url_unusable;  // a URL curl cannot use will not get better
    } else if (reply.status == 429 || reply.status >= 500) {
      error = "HTTP " + std::to_string(reply.status) + ": " + snippet(reply.body, 200);
      if (reply.retry_after >= 0) wait = std::min(reply.retry_after, config.backoff_max_seconds);
    } else if (reply.status != 200) {
      error = "HTTP " + std::to_string(reply.status) + ": " + snippet(reply.body, 500);
      retryable = false;
    } else {
      try {
        Completion r = parseCompletion(reply.body);
        r.attempts = attempt;
        r.retry_errors = std::move(errors);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return r;
      } catch (const BadReply& e) {
        error = e.what();
      }
    }
    errors.push_back(error);
    if (g_stop.load()) throw RequestError("stopped: " + error, false);
    if (!retryable || attempt >= max_attempts) {
      std::string what = "policy request failed after " + std::to_string(attempt) +
                         (attempt == 1 ? " attempt: " : " attempts: ") + error;
      throw RequestError(what, retryable, static_cast<int>(reply.status));
    }
    std::uniform_real_distribution<double> jitter(0.75, 1.25);
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait * jitter(rng));
    while (std::chrono::steady_clock::now() < until && !g_stop.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    backoff = std::min(backoff * 2, config.backoff_max_seconds);
  }
}

}  // namespace kb::chat
