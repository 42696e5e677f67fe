// JSON: a scored candidate (one JSONL line of `kbreward score`), a run
// report, a comparison. NaN is written as null (JSON has no NaN).
#include <cmath>

#include "core/report.h"
#include "report/render.h"
#include "reward/degenerate.h"

namespace kb::report {

namespace {

Json num(double x) { return std::isnan(x) || std::isinf(x) ? Json(nullptr) : Json(x); }
Json strOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json timingToJson(const std::optional<Timing>& t) {
  if (!t) return nullptr;
  Json j;
  j["median_ms"] = num(t->median_ms);
  j["mean_ms"] = num(t->mean_ms);
  j["min_ms"] = num(t->min_ms);
  j["ci95_low_ms"] = num(t->ci95_low_ms);
  j["ci95_high_ms"] = num(t->ci95_high_ms);
  j["n"] = t->n;
  j["baseline"] = strOrNull(t->baseline);
  return j;
}

// kbreward's header: made now (the run takes no measurable time).
ReportHeader kbrewardHeader(const std::string& stage, const std::string& task_id = "",
                            const std::string& solution_hash = "", Status status = Status::Ok) {
  const std::string now = nowIso8601();
  return makeHeader("kbreward", stage, task_id, solution_hash, status, now, now);
}

Json header(const std::string& stage, const std::string& gpu) {
  ReportHeader h = kbrewardHeader(stage);
  h.gpu = gpu;
  return headerToJson(h);
}

Json taskToJson(const TaskRow& t) {
  Json j;
  j["task_id"] = t.task_id;
  j["solution_hash"] = strOrNull(t.solution_hash);
  j["group"] = t.group;
  j["status"] = t.status;
  j["excluded"] = strOrNull(t.excluded);
  j["correct"] = t.correct;
  j["reward"] = t.reward ? num(*t.reward) : Json(nullptr);
  j["speedup_eager"] = num(t.speedup_eager);
  j["speedup_compile"] = num(t.speedup_compile);
  j["faster_than_eager"] = t.faster_than_eager;
  j["faster_than_compile"] = t.faster_than_compile;
  return j;
}

Json groupToJson(const GroupStats& g) {
  Json j;
  j["group"] = g.group;
  j["results"] = g.results;
  j["excluded"] = g.excluded;
  j["scored"] = g.scored;
  j["correct"] = g.correct;
  j["faster_than_eager"] = g.faster_than_eager;
  j["faster_than_compile"] = g.faster_than_compile;
  j["pass_rate"] = num(g.pass_rate);
  j["faster_than_eager_rate"] = num(g.faster_than_eager_rate);
  j["faster_than_compile_rate"] = num(g.faster_than_compile_rate);
  j["geomean_speedup_eager"] = num(g.geomean_speedup_eager);
  j["geomean_speedup_compile"] = num(g.geomean_speedup_compile);
  j["mean_reward"] = num(g.mean_reward);
  Json fp = Json::array();
  for (const FastP& f : g.fast_p)
    fp.push_back({{"p", f.p},
                  {"eager", f.eager},
                  {"eager_rate", num(f.eager_rate)},
                  {"compile", f.compile},
                  {"compile_rate", num(f.compile_rate)}});
  j["fast_p"] = std::move(fp);
  Json sc = Json::object();
  for (const auto& [name, n] : g.status_counts) sc[name] = n;
  j["status_counts"] = std::move(sc);
  return j;
}

Json reportBody(const RunReport& r, bool with_tasks) {
  Json j = header("report", r.gpu);
  j["title"] = r.options.title;
  j["scheme"] = schemeToJson(r.options.scheme);
  j["rate_margin"] = r.options.rate_margin;
  j["fast_p_thresholds"] = r.options.fast_p;
  j["primary_baseline"] = std::string(baselineName(r.options.primary));
  j["timing_method"] = strOrNull(r.timing_method);
  j["precision_contract"] = strOrNull(r.precision_contract);
  j["inputs"] = {{"sources", r.sources}, {"records", r.records}, {"tasks", r.tasks.size()}};
  Json groups = Json::array();
  for (const GroupStats& g : r.groups) groups.push_back(groupToJson(g));
  j["groups"] = std::move(groups);
  j["overall"] = groupToJson(r.all);
  if (with_tasks) {
    Json tasks = Json::array();
    for (const TaskRow& t : r.tasks) tasks.push_back(taskToJson(t));
    j["tasks"] = std::move(tasks);
  }
  Json ws = Json::array();
  for (const Warning& w : r.warnings) ws.push_back(warningToJson(w));
  j["warnings"] = std::move(ws);
  return j;
}

}  // namespace

Json warningToJson(const Warning& w) {
  return {{"kind", w.kind}, {"message", formatWarning(w)}, {"count", w.items.size()}, {"items", w.items}};
}

Json reportToJson(const RunReport& r) { return reportBody(r, true); }

Json comparisonToJson(const Comparison& c) {
  Json j = header("compare", c.a.gpu == c.b.gpu ? c.a.gpu : "");
  j["title"] = c.a.options.title;
  j["primary_baseline"] = std::string(baselineName(c.a.options.primary));
  j["a"] = reportBody(c.a, false);
  j["b"] = reportBody(c.b, false);
  Json changes = Json::object();
  for (const auto& [kind, n] : c.changes) changes[kind] = n;
  j["changes"] = std::move(changes);
  Json tasks = Json::array();
  for (const TaskChange& ch : c.tasks) {
    Json t;
    t["task_id"] = ch.task_id;
    t["group"] = ch.group;
    t["change"] = ch.change;
    t["speedup_ratio"] = num(ch.speedup_ratio);
    t["a"] = ch.a ? taskToJson(*ch.a) : Json(nullptr);
    t["b"] = ch.b ? taskToJson(*ch.b) : Json(nullptr);
    tasks.push_back(std::move(t));
  }
  j["tasks"] = std::move(tasks);
  return j;
}

Json scoreToJson(const Candidate& c, const Score& s, const Scheme& scheme) {
  ReportHeader h = kbrewardHeader("score", c.task_id, c.solution_hash, c.status.value_or(Status::InfraError));
  h.gpu = c.gpu;
  h.driver = c.driver;
  h.torch_version = c.torch_version;
  Json j = headerToJson(h);
  // Outside the closed set there is no honest status name to write.
  if (!c.status) j["status"] = nullptr;
  j["input_status"] = strOrNull(c.input_status);
  j["level"] = c.level ? Json(*c.level) : Json(nullptr);
  j["source"] = strOrNull(c.source);
  j["group"] = groupOf(c);
  j["reward"] = s.reward ? num(*s.reward) : Json(nullptr);
  j["excluded"] = strOrNull(s.excluded);
  j["degenerate_task"] = c.degenerate_task ? reward::degenerateToJson(*c.degenerate_task) : Json(nullptr);
  j["missing"] = strOrNull(s.missing);
  j["correct"] = s.correct;
  j["speedup_eager"] = num(s.speedup_eager);
  j["speedup_compile"] = num(s.speedup_compile);
  j["conservative_speedup_eager"] = num(s.conservative_speedup_eager);
  j["conservative_speedup_compile"] = num(s.conservative_speedup_compile);
  j["faster_than_eager"] = s.faster_than_eager;
  j["faster_than_compile"] = s.faster_than_compile;
  // Which baselines the speed-ups are against (kbprof's names): the eager
  // reference ("libtorch" or "python") and the compile figure ("aoti" or
  // "python_compile"); null where the input does not say.
  auto baselineOf = [](const std::optional<Timing>& t) { return t ? strOrNull(t->baseline) : Json(nullptr); };
  j["baselines"] = {{"eager", baselineOf(c.timings.eager)}, {"compile", baselineOf(c.timings.compile)}};
  j["timing_method"] = strOrNull(c.timing_method);
  j["precision"] = {{"contract", strOrNull(c.precision_contract)}, {"candidate_class", strOrNull(c.precision_class)}};
  j["timings"] = {{"eager", timingToJson(c.timings.eager)},
                  {"compile", timingToJson(c.timings.compile)},
                  {"candidate", timingToJson(c.timings.candidate)}};
  j["scheme"] = schemeToJson(scheme);
  return j;
}

}  // namespace kb::report
