#include "eval/eval.h"

#include "reward/degenerate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"
#include "eval/session.h"
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

const StageResult& Result::stage(std::string_view name) const {
  for (const auto& s : stages)
    if (s.name == name) return s;
  throw Error("no stage " + std::string(name));
}

Result evaluate(const Request& request) {
  Session session(request);
  session.run();
  return std::move(session).take();
}

std::vector<Result> evaluateBatch(const Request& q, const std::vector<solution::Solution>& solutions) {
  if (q.stages.profile) throw UsageError("evaluateBatch: the profile stage is not offered for a batch");
  if (!q.stages.verify || !q.stages.build) throw UsageError("evaluateBatch: a batch is built and verified");
  // Static and build, one solution at a time (the build cache is shared),
  // then the built ones verified together.
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<Session*> all;
  for (const solution::Solution& sol : solutions) {
    Request one = q;
    one.solution = &sol;
    one.solution_dir.clear();
    sessions.push_back(std::make_unique<Session>(std::move(one)));
    sessions.back()->run({.static_check = q.stages.static_check, .build = true});
    all.push_back(sessions.back().get());
  }
  Session::verifyTogether(all);
  std::vector<Result> out;
  for (auto& s : sessions) out.push_back(std::move(*s).take());
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
      } else if (s.detail.contains("steps")) {
        // load_inline extensions the compiler rejected: built without them
        // (docs/solution-format.md), said here so nobody reads "ok" as "compiled".
        for (const auto& st : s.detail["steps"])
          if (st.value("fallback", false))
            out << "  " << st.value("source", "") << ": " << st.value("tool", "")
                << " failed: built without this extension (its load_inline raises; the solution's fallback runs)\n";
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
                const std::optional<reward::Timings>& timings, bool profile_missing, const reward::Scheme& scheme,
                const Json& task_json, const std::string& contract) {
  Json reward;
  reward["scheme"] = reward::schemeToJson(scheme);
  const std::optional<reward::DegenerateTask> degenerate = reward::degenerateOf(task_json);
  if (degenerate) reward["degenerate_task"] = reward::degenerateToJson(*degenerate);
  if (!status) {
    reward["value"] = nullptr;
    reward["excluded"] = "verify_not_available";
    return reward;
  }
  if (*status != Status::InfraError && reward::excludedAsDegenerate(degenerate, contract)) {
    // A trivial solution passes this task under this contract: a verdict on
    // it says nothing about the candidate (docs/kbreward.md).
    reward["value"] = nullptr;
    reward["excluded"] = reward::kDegenerateTask;
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
