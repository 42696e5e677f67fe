#include "eval/session.h"

#include <utility>

#include "build/python_build.h"

#include "core/clock.h"
#include "core/error.h"

namespace fs = std::filesystem;

namespace kb::eval {

namespace {

StageResult skipped(const std::string& name) {
  StageResult s;
  s.name = name;
  s.detail = nullptr;
  return s;
}

// The first line of `why`, without a trailing ':' or ' '.
std::string firstLine(const std::string& why) {
  std::string line = why.substr(0, why.find('\n'));
  while (!line.empty() && (line.back() == ':' || line.back() == ' ')) line.pop_back();
  return line;
}

// Runs one stage's work; with `as_infra`, an exception becomes an
// infra_error of that stage instead of leaving run().
template <typename T, typename Work, typename OnError>
T guarded(bool as_infra, Work&& work, OnError&& on_error) {
  if (!as_infra) return work();
  try {
    return work();
  } catch (const std::exception& e) {
    return on_error(e.what());
  }
}

verify::VerifyResult verifyInfraError(const std::string& why, const std::string& device) {
  verify::VerifyResult v;
  v.status = Status::InfraError;
  v.message = why;
  v.device = device;
  return v;
}

}  // namespace

Session::Session(Request request) : q_(std::move(request)) {
  sol_ = q_.solution;
  open();
}

Session::Session(Request request, solution::Solution solution) : q_(std::move(request)) {
  sol_ = &owned_.emplace(std::move(solution));
  q_.solution = sol_;
  open();
}

Session::~Session() = default;

// A bad task is a usage error before the build; kbprof's order (solution,
// then the task, opened by prepareProfile) where profile is asked. Without
// a build, verify opens the task itself (once: a bundle's files are hashed).
void Session::open() {
  r_.header.tool = q_.tool;
  r_.stages = {skipped("static"), skipped("build"), skipped("verify"), skipped("profile")};
  if (!q_.task_dir.empty() && !q_.stages.profile && q_.stages.build) {
    bundle_ = task::openBundle(q_.task_dir);
    r_.header.task_id = bundle_->info.id;
  }
  if (!sol_ && !q_.solution_dir.empty()) {
    sol_ = &owned_.emplace(solution::loadSolution(q_.solution_dir));
    q_.solution = sol_;
  }
  r_.header.solution_hash = sol_ ? sol_->hash : q_.solution_hash;
  library_ = q_.library;
  // A build cache of the caller's (--cache-dir) holds other solutions'
  // builds: hidden from the workers as the default one is.
  if (!q_.build.cache_dir.empty()) {
    q_.verify.hidden_dirs.push_back(q_.build.cache_dir);
    q_.profile.hidden_dirs.push_back(q_.build.cache_dir);
  }
}

bool Session::kept(std::string_view stage) const {
  if (failed_) return true;
  for (size_t i = 0; i < r_.stages.size(); ++i)
    if (r_.stages[i].name == stage) return kept_[i];
  throw Error("no stage " + std::string(stage));
}

bool Session::settle(StageIndex index, Status status, const std::string& why) {
  StageResult& s = r_.stages[index];
  s.skipped = false;
  s.status = status;
  kept_[index] = status != Status::InfraError;  // nobody's verdict: tried again next time
  if (status == Status::Ok) return true;
  failed_ = kept_[index];
  r_.header.status = status;
  r_.message = s.name + ": " + firstLine(why.empty() ? std::string("failed") : why);
  return false;
}

const Result& Session::run(const Stages& want) {
  if (failed_) return r_;
  const auto t0 = Clock::now();
  if (r_.header.started_at.empty()) r_.header.started_at = nowIso8601();
  r_.header.status = Status::Ok;  // an infra_error of an earlier call is tried again
  r_.message.clear();
  // A library evicted from the build cache since is built again.
  if (kept_[kBuild] && r_.build && r_.build->status == Status::Ok && !library_.empty() && !fs::exists(library_) &&
      ((want.verify && !kept_[kVerify]) || (want.profile && !kept_[kProfile])))
    kept_[kBuild] = false;

  auto finish = [&]() -> const Result& {
    if (failed_) prepared_.reset();  // the profile's workers leave before any candidate code
    r_.header.finished_at = nowIso8601();
    r_.seconds += since(t0);
    return r_;
  };

  if (want.static_check && !kept_[kStatic] && !runStatic()) return finish();

  // profile, set up first: its workers get ready while the solution builds
  // (not when verify runs in between: they would wait through it).
  const bool build_pending = want.build && !kept_[kBuild] && sol_;
  if (want.profile && !kept_[kProfile] && !want.verify && build_pending && !prepared_ && prepare_error_.empty())
    prepareProfileWorkers(q_.profile);

  if (want.build && !kept_[kBuild] && !runBuild()) return finish();
  if (r_.build && q_.build.device_only) return finish();  // nothing to load
  if (want.verify && !kept_[kVerify] && !runVerify()) return finish();
  if (want.profile && !kept_[kProfile]) runProfile();
  return finish();
}

void Session::prepareProfileWorkers(const profile::ProfileOptions& options) {
  try {
    prepared_ = profile::prepareProfile(q_.task_dir, options);
  } catch (const std::exception& e) {
    if (!q_.stage_errors_as_infra) throw;
    prepare_error_ = e.what();
  }
}

bool Session::startProfileWorkers() {
  if (failed_ || kept_[kProfile] || prepared_ || !prepare_error_.empty() || (q_.stages.verify && !kept_[kVerify]))
    return false;
  if (!sol_ && library_.empty()) return false;  // nothing to profile
  profile::ProfileOptions options = q_.profile;
  options.device_named_later = true;
  if (kept_[kVerify] && r_.verify && r_.verify->status == Status::Ok) options.verify = false;  // as runProfile
  prepareProfileWorkers(options);
  return prepared_ != nullptr;
}

bool Session::runStatic() {
  if (!q_.static_checker) {  // no checker given: the stage is not run
    kept_[kStatic] = true;
    return true;
  }
  if (!StaticChecker::available()) {
    r_.static_check = StaticOutcome{};  // asked, but this build has no Clang: not available, skipped
    kept_[kStatic] = true;
    return true;
  }
  if (!sol_) return true;
  r_.static_check = guarded<StaticOutcome>(
      q_.stage_errors_as_infra, [&] { return q_.static_checker->check(*sol_, q_.static_options); },
      [&](const std::string& why) {
        StaticOutcome o;
        o.available = true;
        o.status = Status::InfraError;
        o.result.infra_failed = true;
        o.result.infra_message = why;
        o.message = why;
        o.report = {{"status", "infra_error"}, {"message", why}};
        return o;
      });
  StageResult& st = r_.stages[kStatic];
  st.seconds = r_.static_check->seconds;
  st.detail = r_.static_check->report;
  if (r_.static_check->status != Status::Ok && st.detail.is_object()) st.detail["message"] = r_.static_check->message;
  return settle(kStatic, r_.static_check->status, r_.static_check->message);
}

bool Session::runBuild() {
  if (!sol_) return true;
  r_.build = guarded<build::BuildResult>(
      q_.stage_errors_as_infra,
      [&] {
        build::BuildOptions options = q_.build;
        // A Python solution's ModelNew is built with the task's init (python_build.h).
        if (sol_->isPython() && options.python_init.is_null()) options.python_init = build::taskInitOf(q_.task_dir);
        return build::buildSolution(*sol_, options);
      },
      [&](const std::string& why) {
        build::BuildResult b;
        b.status = Status::InfraError;
        b.message = why;
        return b;
      });
  StageResult& st = r_.stages[kBuild];
  st.seconds = r_.build->seconds;
  st.detail = r_.build->toJson();
  if (r_.build->status == Status::Ok) library_ = r_.build->library;
  else prepared_.reset();  // the profile's workers leave before any candidate code
  return settle(kBuild, r_.build->status, r_.build->message);
}

// r_.verify, just made, into its stage and the header; false when it failed.
bool Session::recordVerify(double seconds) {
  StageResult& st = r_.stages[kVerify];
  st.seconds = seconds;
  st.detail = r_.verify->toJson();
  if (r_.header.task_id.empty()) r_.header.task_id = r_.verify->task_id;
  r_.header.gpu = r_.verify->gpu;
  r_.header.driver = r_.verify->driver;
  r_.header.torch_version = r_.verify->torch_version;
  return settle(kVerify, r_.verify->status, r_.verify->message);
}

bool Session::runVerify() {
  const auto tv = Clock::now();
  r_.verify = guarded<verify::VerifyResult>(
      q_.stage_errors_as_infra,
      [&] { return verify::verifySolution(bundle_ ? bundle_->dir : q_.task_dir, library_, q_.verify); },
      [&](const std::string& why) { return verifyInfraError(why, q_.verify.device); });
  return recordVerify(since(tv));
}

bool Session::runProfile() {
  const auto tp = Clock::now();
  profile::ProfileOptions options = q_.profile;
  // A solution this session has verified is not verified twice; the sampled
  // timed calls are still checked against the reference.
  if (kept_[kVerify] && r_.verify && r_.verify->status == Status::Ok) options.verify = false;
  r_.profile = guarded<profile::ProfileResult>(
      q_.stage_errors_as_infra,
      [&] {
        if (!prepare_error_.empty()) throw Error(std::exchange(prepare_error_, ""));
        if (!prepared_) prepared_ = profile::prepareProfile(q_.task_dir, options, !library_.empty());
        prepared_->nameDevice(options.device);  // held workers (startProfileWorkers): the leased GPU
        return prepared_->run(library_, r_.header.solution_hash);
      },
      [&](const std::string& why) {
        profile::ProfileResult p;
        p.status = Status::InfraError;
        p.message = why;
        return p;
      });
  prepared_.reset();
  StageResult& st = r_.stages[kProfile];
  st.seconds = since(tp);
  st.detail = r_.profile->toJson();
  if (r_.header.task_id.empty()) r_.header.task_id = r_.profile->task_id;
  if (r_.header.gpu.empty()) r_.header.gpu = r_.profile->gpu;
  if (r_.header.driver.empty()) r_.header.driver = r_.profile->driver;
  if (r_.header.torch_version.empty()) r_.header.torch_version = r_.profile->torch_version;
  return settle(kProfile, r_.profile->status, r_.profile->message);
}

void Session::verifyTogether(const std::vector<Session*>& sessions) {
  std::vector<Session*> ready;
  std::vector<fs::path> libraries;
  for (Session* s : sessions) {
    if (s->failed_ || s->kept_[kVerify] || !s->kept_[kBuild] || !s->r_.build || s->q_.build.device_only) continue;
    ready.push_back(s);
    libraries.push_back(s->library_);
  }
  if (ready.empty()) return;
  // All at once: every session gets the batch's verify time.
  const Request& q = ready.front()->q_;
  const auto tv = Clock::now();
  std::vector<verify::VerifyResult> verdicts = guarded<std::vector<verify::VerifyResult>>(
      q.stage_errors_as_infra, [&] { return verify::verifySolutions(q.task_dir, libraries, q.verify); },
      [&](const std::string& why) {
        return std::vector<verify::VerifyResult>(ready.size(), verifyInfraError(why, q.verify.device));
      });
  const double seconds = since(tv);
  for (size_t j = 0; j < ready.size(); ++j) {
    Session& s = *ready[j];
    s.r_.verify = std::move(verdicts[j]);
    s.r_.header.status = Status::Ok;
    s.r_.message.clear();
    s.recordVerify(seconds);
    s.r_.header.finished_at = nowIso8601();
    s.r_.seconds += seconds;
  }
}

}  // namespace kb::eval
