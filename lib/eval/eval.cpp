#include "eval/eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"
#include "task/bundle.h"

namespace fs = std::filesystem;

namespace kb::eval {

// ---- the static stage ------------------------------------------------------

bool StaticChecker::available() {
#ifdef KB_HAVE_CLANG
  return true;
#else
  return false;
#endif
}

// ---- one request -----------------------------------------------------------

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
// infra_error of that stage instead of leaving evaluate().
template <typename T, typename Work, typename OnError>
T guarded(bool as_infra, Work&& work, OnError&& on_error) {
  if (!as_infra) return work();
  try {
    return work();
  } catch (const std::exception& e) {
    return on_error(e.what());
  }
}

// The failing stage `s` decides the request's status and message.
void fail(Result& r, const StageResult& s, const std::string& why) {
  r.header.status = s.status;
  r.message = s.name + ": " + firstLine(why);
}

verify::VerifyResult verifyInfraError(const std::string& why, const std::string& device) {
  verify::VerifyResult v;
  v.status = Status::InfraError;
  v.message = why;
  v.device = device;
  return v;
}

// r.verify, just made, into its stage and the header; false when it failed.
bool recordVerify(Result& r, double seconds) {
  StageResult& st = r.stages[2];
  st.skipped = false;
  st.status = r.verify->status;
  st.seconds = seconds;
  st.detail = r.verify->toJson();
  if (r.header.task_id.empty()) r.header.task_id = r.verify->task_id;
  r.header.gpu = r.verify->gpu;
  r.header.driver = r.verify->driver;
  r.header.torch_version = r.verify->torch_version;
  if (st.status == Status::Ok) return true;
  fail(r, st, r.verify->message);
  return false;
}

}  // namespace

const StageResult& Result::stage(std::string_view name) const {
  for (const auto& s : stages)
    if (s.name == name) return s;
  throw Error("no stage " + std::string(name));
}

Result evaluate(const Request& q) {
  auto t0 = Clock::now();
  Result r;
  r.header.tool = q.tool;
  r.header.started_at = nowIso8601();
  r.stages = {skipped("static"), skipped("build"), skipped("verify"), skipped("profile")};
  StageResult& st_static = r.stages[0];
  StageResult& st_build = r.stages[1];
  StageResult& st_profile = r.stages[3];
  const bool as_infra = q.stage_errors_as_infra;

  // A bad task is a usage error before the build; kbprof's order (solution,
  // then the task, opened by prepareProfile) where profile is asked. Without
  // a build, verify opens the task itself (once: a bundle's files are hashed).
  std::optional<task::TaskBundle> bundle;
  if (!q.task_dir.empty() && !q.stages.profile && q.stages.build) {
    bundle = task::openBundle(q.task_dir);
    r.header.task_id = bundle->info.id;
  }
  std::optional<solution::Solution> loaded;
  const solution::Solution* sol = q.solution;
  if (!sol && !q.solution_dir.empty()) sol = &loaded.emplace(solution::loadSolution(q.solution_dir));
  r.header.solution_hash = sol ? sol->hash : q.solution_hash;

  auto finish = [&]() -> Result {
    r.header.finished_at = nowIso8601();
    r.seconds = since(t0);
    return std::move(r);
  };
  auto failed = [&](const StageResult& s, const std::string& why) { fail(r, s, why); };

  // static
  if (q.stages.static_check && q.static_checker && !StaticChecker::available())
    r.static_check = StaticOutcome{};  // asked, but this build has no Clang: not available, skipped
  if (q.stages.static_check && q.static_checker && StaticChecker::available() && sol) {
    r.static_check = guarded<StaticOutcome>(
        as_infra, [&] { return q.static_checker->check(*sol, q.static_options); },
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
    st_static.skipped = false;
    st_static.status = r.static_check->status;
    st_static.seconds = r.static_check->seconds;
    st_static.detail = r.static_check->report;
    if (st_static.status != Status::Ok) {
      if (st_static.detail.is_object()) st_static.detail["message"] = r.static_check->message;
      failed(st_static, r.static_check->message.empty() ? std::string("failed") : r.static_check->message);
      return finish();
    }
  }

  // profile, set up first: its workers get ready while the solution builds
  // (not when verify runs in between: they would wait through it).
  std::unique_ptr<profile::PreparedProfile> prepared;
  const bool early_profile = q.stages.profile && !q.stages.verify && q.stages.build && sol;
  std::string prepare_error;  // stage_errors_as_infra: reported by the profile stage, after the build
  if (early_profile) {
    try {
      prepared = profile::prepareProfile(q.task_dir, q.profile);
    } catch (const std::exception& e) {
      if (!as_infra) throw;
      prepare_error = e.what();
    }
  }

  // build
  fs::path library = q.library;
  if (q.stages.build && sol) {
    r.build = guarded<build::BuildResult>(
        as_infra, [&] { return build::buildSolution(*sol, q.build); },
        [&](const std::string& why) {
          build::BuildResult b;
          b.status = Status::InfraError;
          b.message = why;
          return b;
        });
    st_build.skipped = false;
    st_build.status = r.build->status;
    st_build.seconds = r.build->seconds;
    st_build.detail = r.build->toJson();
    if (st_build.status != Status::Ok) {
      prepared.reset();  // the profile's workers leave before any candidate code
      failed(st_build, r.build->message.empty() ? std::string("failed") : r.build->message);
      return finish();
    }
    library = r.build->library;
    if (q.build.device_only) return finish();  // nothing to load
  }

  // verify
  if (q.stages.verify) {
    auto tv = Clock::now();
    r.verify = guarded<verify::VerifyResult>(
        as_infra, [&] { return verify::verifySolution(bundle ? bundle->dir : q.task_dir, library, q.verify); },
        [&](const std::string& why) { return verifyInfraError(why, q.verify.device); });
    if (!recordVerify(r, since(tv))) return finish();
  }

  // profile
  if (q.stages.profile) {
    auto tp = Clock::now();
    r.profile = guarded<profile::ProfileResult>(
        as_infra,
        [&] {
          if (!prepare_error.empty()) throw Error(prepare_error);
          if (!prepared) prepared = profile::prepareProfile(q.task_dir, q.profile, !library.empty());
          return prepared->run(library, r.header.solution_hash);
        },
        [&](const std::string& why) {
          profile::ProfileResult p;
          p.status = Status::InfraError;
          p.message = why;
          return p;
        });
    prepared.reset();
    st_profile.skipped = false;
    st_profile.status = r.profile->status;
    st_profile.seconds = since(tp);
    st_profile.detail = r.profile->toJson();
    if (r.header.task_id.empty()) r.header.task_id = r.profile->task_id;
    if (r.header.gpu.empty()) r.header.gpu = r.profile->gpu;
    if (r.header.driver.empty()) r.header.driver = r.profile->driver;
    if (r.header.torch_version.empty()) r.header.torch_version = r.profile->torch_version;
    if (st_profile.status != Status::Ok) failed(st_profile, r.profile->message);
  }
  return finish();
}

std::vector<Result> evaluateBatch(const Request& q, const std::vector<solution::Solution>& solutions) {
  if (q.stages.profile) throw UsageError("evaluateBatch: the profile stage is not offered for a batch");
  if (!q.stages.verify || !q.stages.build) throw UsageError("evaluateBatch: a batch is built and verified");
  // Static and build, one solution at a time (the build cache is shared).
  std::vector<Result> out;
  std::vector<fs::path> libraries;
  std::vector<size_t> built;
  for (size_t k = 0; k < solutions.size(); ++k) {
    Request one = q;
    one.solution = &solutions[k];
    one.solution_dir.clear();
    one.stages.verify = false;
    out.push_back(evaluate(one));
    if (out.back().status() == Status::Ok && out.back().build && !q.build.device_only) {
      libraries.push_back(out.back().build->library);
      built.push_back(k);
    }
  }
  if (built.empty()) return out;
  // Verify, all at once: every result gets the batch's verify time.
  auto tv = Clock::now();
  std::vector<verify::VerifyResult> verdicts = guarded<std::vector<verify::VerifyResult>>(
      q.stage_errors_as_infra, [&] { return verify::verifySolutions(q.task_dir, libraries, q.verify); },
      [&](const std::string& why) {
        return std::vector<verify::VerifyResult>(built.size(), verifyInfraError(why, q.verify.device));
      });
  const double seconds = since(tv);
  for (size_t j = 0; j < built.size(); ++j) {
    Result& r = out[built[j]];
    r.verify = std::move(verdicts[j]);
    recordVerify(r, seconds);
    r.header.finished_at = nowIso8601();
    r.seconds += seconds;
  }
  return out;
}

// ---- what callers render ---------------------------------------------------

Json checkReportJson(const Result& result, const std::string& stage) {
  ReportHeader h = result.header;
  h.tool = "kbcheck";
  h.stage = stage;
  Json j = headerToJson(h);
  j["message"] = result.message;
  j["seconds"] = result.seconds;
  Json st = Json::object();
  for (const auto& s : result.stages) {
    if (s.name == "profile") continue;  // kbprof's
    Json sj;
    sj["status"] = s.skipped ? Json(nullptr) : Json(std::string(statusName(s.status)));
    sj["skipped"] = s.skipped;
    sj["seconds"] = s.seconds;
    sj["report"] = s.detail;
    st[s.name] = sj;
  }
  j["stages"] = st;
  return j;
}

namespace {

std::string fmt(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  return buf;
}

}  // namespace

std::string renderCheckText(const Result& result) {
  std::ostringstream out;
  bool any = false;
  for (const auto& s : result.stages) {
    if (s.skipped || s.name == "profile") continue;
    any = true;
    out << s.name << ": " << statusName(s.status) << " (" << fmt(s.seconds) << ")";
    if (s.name == "build" && s.detail.is_object()) {
      if (s.detail.value("cached", false)) out << " from the cache";
      if (s.detail["library"].is_string()) out << " -> " << s.detail["library"].get<std::string>();
      out << "\n";
      if (s.status != Status::Ok) {
        out << "  " << s.detail.value("message", "") << "\n";
        out << s.detail.value("diagnostics", "");
      }
    } else if (s.name == "verify" && s.detail.is_object()) {
      const Json& w = s.detail["worker"];
      out << " on " << s.detail.value("device", "") << ", " << s.detail["seeds"].size() << " seed(s); worker "
          << w.value("end", "") << " after " << fmt(w.value("wall_seconds", 0.0)) << "\n";
      if (s.status != Status::Ok) out << "  " << s.detail.value("message", "") << "\n";
      for (const auto& sd : s.detail["seeds"]) {
        double worst = 0;
        for (const auto& o : sd["outputs"]) worst = std::max(worst, o.value("max_abs_error", 0.0));
        out << "  " << task::seedName(sd.value("seed", uint64_t{0})) << ": " << sd["status"].get<std::string>() << ", max abs error " << worst
            << ", forward " << fmt(sd.value("forward_seconds", 0.0)) << "\n";
      }
      std::string output = w.value("output", "");
      if (s.status != Status::Ok && !output.empty()) {
        out << "  worker output" << (w.value("output_truncated", false) ? " (cut)" : "") << ":\n";
        std::istringstream in(output);
        std::string line;
        for (int n = 0; n < 20 && std::getline(in, line); ++n) out << "    " << line << "\n";
      }
    } else {
      out << "\n";
      if (s.status != Status::Ok && s.detail.is_object()) out << "  " << s.detail.value("message", "") << "\n";
    }
  }
  if (result.status() != Status::Ok && !any) out << result.message << "\n";
  return out.str();
}

Json profileReportJson(const Result& result) {
  if (result.profile) {
    Json j = result.profile->toJson();
    j["build"] = result.build ? result.build->toJson() : Json(nullptr);
    return j;
  }
  // A solution that never reached the GPU: the build failed.
  const build::BuildResult b = result.build.value_or(build::BuildResult{});
  std::string now = nowIso8601();
  Json j = headerToJson(makeHeader("kbprof", "build", "", b.solution_hash, b.status, now, now));
  j["message"] = b.message;
  j["evidence"] = Json::array();
  j["timing_method"] = result.build && result.build->target == "cpu" ? "host_clock" : "cuda_events";
  j["timings"] = Json::object();
  j["build"] = b.toJson();
  return j;
}

Json rewardJson(const std::string& task_id, const std::string& solution_hash, std::optional<Status> status,
                const std::optional<reward::Timings>& timings, bool profile_missing, const reward::Scheme& scheme) {
  Json reward;
  reward["scheme"] = reward::schemeToJson(scheme);
  if (!status) {
    reward["value"] = nullptr;
    reward["excluded"] = "verify_not_available";
    return reward;
  }
  if (*status == Status::Ok && profile_missing && scheme.kind != reward::SchemeKind::Correctness) {
    // Correct, but the milestone reward needs GPU timings against eager and
    // torch.compile, which a CPU task does not have: no reward is made up.
    reward["value"] = nullptr;
    reward["excluded"] = "profile_not_available";
    reward["correct"] = true;
    return reward;
  }
  reward::Candidate cand;
  cand.task_id = task_id;
  cand.solution_hash = solution_hash;
  cand.status = status;
  cand.input_status = std::string(statusName(*status));
  if (timings) cand.timings = *timings;
  reward::Score s = reward::score(cand, scheme);
  reward["value"] = s.reward ? Json(*s.reward) : Json(nullptr);
  reward["excluded"] = s.excluded.empty() ? Json(nullptr) : Json(s.excluded);
  if (!s.missing.empty()) reward["missing"] = s.missing;
  reward["correct"] = s.correct;
  if (s.correct && timings) {
    reward["speedup_eager"] = std::isnan(s.speedup_eager) ? Json(nullptr) : Json(s.speedup_eager);
    reward["speedup_compile"] = std::isnan(s.speedup_compile) ? Json(nullptr) : Json(s.speedup_compile);
  }
  return reward;
}

reward::Timings rewardTimings(const profile::ProfileResult& p) {
  auto one = [](const profile::TimingStats& t) {
    reward::Timing x;  // all NaN when not timed
    if (!t.present()) return x;
    x.median_ms = t.event.median;
    x.mean_ms = t.event.mean;
    x.min_ms = t.event.min;
    x.ci95_low_ms = t.event.ci_low;
    x.ci95_high_ms = t.event.ci_high;
    return x;
  };
  reward::Timings out;
  out.eager = one(p.eager);
  out.compile = one(p.compile);
  out.candidate = one(p.candidate);
  return out;
}

}  // namespace kb::eval
