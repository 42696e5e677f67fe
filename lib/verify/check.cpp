#include "verify/check.h"

#include <chrono>

#include "core/clock.h"
#include "core/error.h"
#include "task/bundle.h"

namespace fs = std::filesystem;

namespace kb {
namespace {

StageReport skipped(const std::string& name) {
  StageReport s;
  s.name = name;
  s.skipped = true;
  s.detail = nullptr;
  return s;
}

}  // namespace

StageReport buildStage(const Solution& solution, const BuildOptions& options, BuildResult* out) {
  StageReport s;
  s.name = "build";
  BuildResult b = buildSolution(solution, options);
  s.status = b.status;
  s.seconds = b.seconds;
  s.detail = b.toJson();
  if (out) *out = std::move(b);
  return s;
}

Json CheckReport::toJson() const {
  ReportHeader h;
  h.tool = "kbcheck";
  h.task_id = task_id;
  h.solution_hash = solution_hash;
  h.gpu = gpu;
  h.driver = driver;
  h.torch_version = torch_version;
  h.started_at = started_at;
  h.finished_at = finished_at;
  h.status = status;
  Json j = headerToJson(h);
  j["message"] = message;
  j["seconds"] = seconds;
  Json st = Json::object();
  for (const auto& s : stages) {
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

CheckReport runCheck(const fs::path& task_dir, const fs::path& solution_dir,
                     const CheckOptions& options) {
  auto t0 = Clock::now();
  CheckReport report;
  report.started_at = nowIso8601();
  TaskBundle bundle = openBundle(task_dir);  // bad task: usage error before any work
  report.task_id = bundle.info.id;
  Solution solution = loadSolution(solution_dir);
  report.solution_hash = solution.hash;
  auto finish = [&]() {
    while (report.stages.size() < 3)
      report.stages.push_back(skipped(report.stages.size() == 1 ? "build" : "verify"));
    report.finished_at = nowIso8601();
    report.seconds = since(t0);
    return report;
  };
  auto failed = [&](const StageReport& s, const std::string& message) {
    report.status = s.status;
    std::string line = message.substr(0, message.find('\n'));
    while (!line.empty() && (line.back() == ':' || line.back() == ' ')) line.pop_back();
    report.message = s.name + ": " + line;
  };

  // static
  if (options.static_stage) {
    StageReport s = options.static_stage(solution);
    report.stages.push_back(s);
    if (s.status != Status::Ok) {
      failed(s, s.detail.is_object() ? s.detail.value("message", std::string("failed")) : "failed");
      return finish();
    }
  } else {
    report.stages.push_back(skipped("static"));
  }

  // build
  BuildResult built;
  StageReport b = buildStage(solution, options.build, &built);
  report.stages.push_back(b);
  if (b.status != Status::Ok) {
    failed(b, built.message.empty() ? "failed" : built.message);
    return finish();
  }
  if (options.build.device_only) return finish();  // nothing to load

  // verify
  StageReport v;
  v.name = "verify";
  auto tv = Clock::now();
  VerifyResult vr = verifySolution(bundle.dir, built.library, options.verify);
  v.status = vr.status;
  v.seconds = since(tv);
  v.detail = vr.toJson();
  report.gpu = vr.gpu;
  report.driver = vr.driver;
  report.torch_version = vr.torch_version;
  report.stages.push_back(v);
  if (v.status != Status::Ok) failed(v, vr.message);
  return finish();
}

}  // namespace kb
