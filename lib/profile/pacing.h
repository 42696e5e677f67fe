// kbprof's side of the timed-call protocol (profile/timing.cpp has the
// worker's): the parent answers the worker's questions on its stdin socket,
// one line each, and in doing so draws every timed call's seed, keeps the
// loop in step with the result channel and times each call with its own
// clock. Torch-free; tests drive it with a hand-written channel.
//
//   null begin J / null end J   the trusted phase's null calls (before any seed)
//   seed K                      call K's seed, drawn now; answered only when
//                               the channel holds call K-1's commit
//   begin K / end K             the parent's clock around call K
//   done N                      the loop is over after N calls, all committed
//
// Anything out of turn (a question the harness never asks there, a seed
// asked before the last call's commit arrived, a second commit) is a
// protocol violation: it is answered "refused", and the profile ends
// hack_detected. Only code that is not the harness's asks out of turn.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "verify/wire.h"

namespace kb::profile {

struct PacedCall {
  uint64_t seed = 0;
  double begin_s = -1, end_s = -1;  // the parent's clock, seconds since the pacer began
  double windowMs() const { return begin_s >= 0 && end_s >= begin_s ? (end_s - begin_s) * 1e3 : 0.0; }
};

class CallPacer {
 public:
  // `channel`: the worker's result file, which the parent's reader fills;
  // `taken`: seeds no timed call may get (the task's correctness seeds);
  // `max_calls`: the most timed calls the channel was sized for.
  CallPacer(std::filesystem::path channel, std::set<uint64_t> taken, uint64_t max_calls,
            double commit_wait_seconds = 30);

  // The answer (without its newline) to one line the worker wrote.
  std::string answer(const std::string& question);

  const std::vector<PacedCall>& calls() const { return calls_; }
  std::vector<double> nullWindowsMs() const;
  bool done() const { return done_; }
  const std::string& violation() const { return violation_; }
  // The commits' headers, in the order they arrived (each checked against
  // its call when it came).
  const std::vector<Json>& commits() const { return commits_; }

 private:
  std::string refuse(const std::string& why);
  // Waits (bounded) until the channel holds exactly `n` commits; false with
  // a violation otherwise.
  bool committed(uint64_t n);

  verify::ChannelTail tail_;
  std::set<uint64_t> taken_;
  uint64_t max_calls_;
  double commit_wait_seconds_;
  Clock::time_point t0_ = Clock::now();
  std::vector<PacedCall> calls_;
  std::vector<std::pair<double, double>> nulls_;
  std::vector<Json> commits_;
  bool done_ = false;
  std::string violation_;
};

}  // namespace kb::profile
