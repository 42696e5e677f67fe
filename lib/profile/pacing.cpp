// kbprof's side of the timed-call protocol (pacing.h).
#include "profile/pacing.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>

namespace kb::profile {
namespace {

// "word N" -> N; false when the line is not that.
bool parse(const std::string& line, const std::string& word, uint64_t& n) {
  if (line.size() <= word.size() + 1 || line.compare(0, word.size() + 1, word + " ") != 0) return false;
  const std::string digits = line.substr(word.size() + 1);
  if (digits.empty() || digits.size() > 19 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  n = std::strtoull(digits.c_str(), nullptr, 10);
  return true;
}

}  // namespace

CallPacer::CallPacer(std::filesystem::path channel, std::set<uint64_t> taken, uint64_t max_calls,
                     double commit_wait_seconds)
    : tail_(std::move(channel)), taken_(std::move(taken)), max_calls_(max_calls),
      commit_wait_seconds_(commit_wait_seconds) {}

std::vector<double> CallPacer::nullWindowsMs() const {
  std::vector<double> out;
  for (const auto& [b, e] : nulls_)
    if (b >= 0 && e >= b) out.push_back((e - b) * 1e3);
  return out;
}

std::string CallPacer::refuse(const std::string& why) {
  if (violation_.empty()) violation_ = why;
  return "refused: " + violation_;
}

bool CallPacer::committed(uint64_t n) {
  for (auto t0 = Clock::now();;) {
    std::vector<Json> headers;
    std::string problem;
    if (!tail_.poll(headers, &problem)) {
      refuse("the result channel is malformed (" + problem + "): something other than the harness wrote to it");
      return false;
    }
    for (auto& h : headers) {
      if (h.value("type", "") != "commit") continue;
      const uint64_t k = commits_.size();
      if (h.value("call", ~0ull) != k || k >= calls_.size() || h.value("seed", uint64_t{0}) != calls_[k].seed ||
          calls_[k].end_s < 0) {
        refuse("a commit for timed call " + std::to_string(h.value("call", ~0ull)) +
               " that is not the one the parent expected (call " + std::to_string(k) +
               "): something other than the harness wrote to the channel");
        return false;
      }
      commits_.push_back(std::move(h));
    }
    if (commits_.size() > n) {
      refuse("more commits than timed calls: something other than the harness wrote to the channel");
      return false;
    }
    if (commits_.size() == n) return true;
    if (since(t0) > commit_wait_seconds_) {
      refuse("timed call " + std::to_string(n - 1) + "'s commit did not reach the channel before the next question");
      return false;
    }
    ::usleep(200);
  }
}

std::string CallPacer::answer(const std::string& q) {
  if (!violation_.empty() || done_) return refuse(done_ ? "a question after the loop ended: '" + q.substr(0, 80) + "'" : violation_);
  const double now = since(t0_);
  uint64_t n = 0;
  if (parse(q, "null begin", n)) {
    if (!calls_.empty() || n != nulls_.size() || (!nulls_.empty() && nulls_.back().second < 0))
      return refuse("'" + q + "' out of turn");
    nulls_.push_back({now, -1});
    return "go";
  }
  if (parse(q, "null end", n)) {
    if (!calls_.empty() || n + 1 != nulls_.size() || nulls_.back().second >= 0) return refuse("'" + q + "' out of turn");
    nulls_.back().second = now;
    return "ok";
  }
  if (parse(q, "seed", n)) {
    if (n != calls_.size() || (!calls_.empty() && calls_.back().end_s < 0) || (!nulls_.empty() && nulls_.back().second < 0))
      return refuse("'" + q + "' out of turn (" + std::to_string(calls_.size()) + " seeds given)");
    if (n >= max_calls_) return refuse("more timed calls than the channel was sized for (" + std::to_string(max_calls_) + ")");
    if (!committed(n)) return "refused: " + violation_;
    std::random_device rd;
    uint64_t seed = 0;
    do seed = ((static_cast<uint64_t>(rd()) << 32) ^ rd()) >> 1;  // below 2^63: JSON readers take it signed too
    while (!taken_.insert(seed).second);
    calls_.push_back({seed, -1, -1});
    return Json{{"seed", seed}}.dump();
  }
  if (parse(q, "begin", n)) {
    if (n + 1 != calls_.size() || calls_.back().begin_s >= 0) return refuse("'" + q + "' out of turn");
    calls_.back().begin_s = since(t0_);
    return "go";
  }
  if (parse(q, "end", n)) {
    if (n + 1 != calls_.size() || calls_.back().begin_s < 0 || calls_.back().end_s >= 0)
      return refuse("'" + q + "' out of turn");
    calls_.back().end_s = now;
    return "ok";
  }
  if (parse(q, "done", n)) {
    if (n != calls_.size() || (!calls_.empty() && calls_.back().end_s < 0)) return refuse("'" + q + "' out of turn");
    if (!committed(n)) return "refused: " + violation_;
    done_ = true;
    return "ok";
  }
  return refuse("the worker asked something the harness never asks: '" + q.substr(0, 80) + "'");
}

}  // namespace kb::profile
