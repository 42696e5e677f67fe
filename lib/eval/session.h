// One solution's evaluation, kept between calls: the one chain static ->
// build -> verify -> profile that stops at the first failure. Every driver
// goes through it: evaluate() (kbcheck, kbprof) is one session asked once;
// the rollout environment (lib/agent) keeps a session per solution and asks
// it stage by stage as the agent's tools and the final check want (one
// solution read, one build, one verdict, whatever the order of the calls);
// kbserve asks it twice, static and build on a CPU slot, then verify and
// profile on a GPU lease, and reports the one result.
//
// What a session keeps: each stage that passed, or failed for the
// solution's own fault, with its typed result and report; the built
// library. A kept failure answers every later call at once. A stage that
// ended infra_error is not kept (it was nobody's verdict): the next call
// runs it again. A library that left the build cache since is built again.
// A profile after a passed verify does not run the correctness seeds again
// (its sampled timed calls are still compared with the reference).
//
// Not thread-safe: one owner asks it at a time.
#pragma once

#include <array>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/eval.h"
#include "task/bundle.h"

namespace kb::eval {

class Session {
 public:
  // `request` names the task, the solution (solution, solution_dir, or a
  // library built earlier with its hash) and every stage's options; its
  // `stages` are what run() runs when not told otherwise. A `solution`
  // pointer must outlive the session. Throws kb::UsageError for a missing or
  // malformed solution, or task where the build is asked without the
  // profile (kbcheck's order: the task first); kbprof's order, the solution
  // first and the task when the profile starts, holds otherwise.
  explicit Session(Request request);
  // The same, the session owning `solution` (request.solution is ignored).
  Session(Request request, solution::Solution solution);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  // Runs what `stages` asks for and the session does not keep yet, in
  // order, stopping at the first failure; returns the result so far (every
  // stage the session ran or kept, in kbcheck's four stages). With
  // request.stage_errors_as_infra false a stage's exception leaves run().
  const Result& run(const Stages& stages);
  const Result& run() { return run(q_.stages); }

  const Result& result() const { return r_; }
  Result take() && { return std::move(r_); }

  // The options of the stages still to run: a caller that leases a device
  // for verify or profile names it here before run().
  Request& request() { return q_; }
  const std::string& solutionHash() const { return r_.header.solution_hash; }
  const solution::Solution* solution() const { return sol_; }
  // True when a later run() will not run `stage` again ("static", "build",
  // "verify", "profile"): it is kept, or an earlier stage's failure is.
  bool kept(std::string_view stage) const;
  // A kept stage failed: run() answers at once from now on.
  bool failed() const { return failed_; }

  // Starts the profile's workers now, for a later run() that profiles:
  // held before their first CUDA call until that run() names the device
  // (request().profile.device; until then the request's device is a
  // placeholder of the same GPU kind). kbserve calls it before the build, on
  // its CPU slot, so that its GPU lease holds no process start-up. False
  // (nothing started) when the profile is kept or failed, verify is still
  // to run (its workers come first), or the workers were started already.
  bool startProfileWorkers();

  // The built sessions' verify stages at once (verify::verifySolutions: a
  // candidate worker each, one reference worker for all), the options and
  // task of the first one's request. Sessions that failed, are not built or
  // have their verdict already are left as they are.
  static void verifyTogether(const std::vector<Session*>& sessions);

 private:
  enum StageIndex { kStatic = 0, kBuild = 1, kVerify = 2, kProfile = 3 };
  void open();
  bool runStatic();
  void prepareProfileWorkers(const profile::ProfileOptions& options);
  bool runBuild();
  bool runVerify();
  bool runProfile();
  bool recordVerify(double seconds);
  // The stage at `index` ran with `status`: kept unless infra_error; false
  // (the chain stops) unless ok.
  bool settle(StageIndex index, Status status, const std::string& why);

  Request q_;
  std::optional<solution::Solution> owned_;
  const solution::Solution* sol_ = nullptr;
  std::optional<task::TaskBundle> bundle_;
  std::filesystem::path library_;
  std::array<bool, 4> kept_{};
  bool failed_ = false;
  // The profile's workers, started before the build (or startProfileWorkers)
  // and waiting for the library; prepare_error_: why they could not be
  // (stage_errors_as_infra), reported by the profile stage.
  std::unique_ptr<profile::PreparedProfile> prepared_;
  std::string prepare_error_;
  Result r_;
};

}  // namespace kb::eval
