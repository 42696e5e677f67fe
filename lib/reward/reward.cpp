#include "reward/reward.h"

#include <cmath>

#include "core/speedup.h"
#include "reward/degenerate.h"

namespace kb::reward {

std::string_view schemeName(SchemeKind k) {
  switch (k) {
    case SchemeKind::Milestone: return "milestone";
    case SchemeKind::Speedup: return "speedup";
    case SchemeKind::LogSpeedup: return "log-speedup";
    case SchemeKind::Correctness: return "correctness";
  }
  return "milestone";
}

namespace {
constexpr SchemeKind kSchemes[] = {SchemeKind::Milestone, SchemeKind::Speedup, SchemeKind::LogSpeedup,
                                   SchemeKind::Correctness};
}  // namespace

std::optional<SchemeKind> parseSchemeName(std::string_view s) {
  for (SchemeKind k : kSchemes)
    if (schemeName(k) == s) return k;
  return std::nullopt;
}

std::vector<std::string> schemeNames() {
  std::vector<std::string> out;
  for (SchemeKind k : kSchemes) out.emplace_back(schemeName(k));
  return out;
}

std::string_view statName(Stat s) {
  switch (s) {
    case Stat::Median: return "median";
    case Stat::Mean: return "mean";
    case Stat::Min: return "min";
  }
  return "median";
}

std::optional<Stat> parseStatName(std::string_view s) {
  for (Stat k : {Stat::Median, Stat::Mean, Stat::Min})
    if (statName(k) == s) return k;
  return std::nullopt;
}

std::string_view baselineName(Baseline b) { return b == Baseline::Eager ? "eager" : "compile"; }

std::optional<Baseline> parseBaselineName(std::string_view s) {
  if (s == "eager") return Baseline::Eager;
  if (s == "compile") return Baseline::Compile;
  return std::nullopt;
}

Json schemeToJson(const Scheme& s) {
  Json j;
  j["name"] = std::string(schemeName(s.kind));
  j["margin"] = s.margin;
  j["noise_aware"] = s.noise_aware;
  j["statistic"] = std::string(statName(s.stat));
  j["values"] = {{"fail", s.fail_value},
                 {"slower", s.slower_value},
                 {"faster_than_eager", s.eager_value},
                 {"faster_than_both", s.both_value}};
  j["speedup_baseline"] = std::string(baselineName(s.speedup_baseline));
  return j;
}

bool fasterBy(double t, double t0, double margin) {
  if (!(t > 0) || !(t0 > 0)) return false;
  return (t0 - t) / t0 > margin + kTieEpsilon;
}

double statOf(const Timing& t, Stat stat) {
  switch (stat) {
    case Stat::Median: return t.median_ms;
    case Stat::Mean: return t.mean_ms;
    case Stat::Min: return t.min_ms;
  }
  return kNaN;
}

namespace {

const std::optional<Timing>& baseOf(const Timings& t, Baseline b) {
  return b == Baseline::Eager ? t.eager : t.compile;
}

double ratio(double t0, double t) { return speedup(t0, t).value_or(kNaN); }

}  // namespace

bool beats(const Timings& t, Baseline base, double margin, Stat stat, bool noise_aware) {
  const auto& b = baseOf(t, base);
  if (!b || !t.candidate) return false;
  if (noise_aware) return fasterBy(t.candidate->ci95_high_ms, b->ci95_low_ms, margin);
  return fasterBy(statOf(*t.candidate, stat), statOf(*b, stat), margin);
}

Score score(const Candidate& c, const Scheme& s) {
  Score out;
  if (excludedAsDegenerate(c.degenerate_task, c.precision_contract)) {
    // A trivial solution passes the task under the contract this candidate
    // was judged by: whatever it did, its score would measure the task.
    out.excluded = kDegenerateTask;
    return out;
  }
  if (!c.status) {
    out.excluded = c.input_status.empty() ? "missing_status" : "unknown_status";
    return out;
  }
  if (*c.status == Status::InfraError) {
    out.excluded = "infra_error";  // never the solution's fault, so never -1
    return out;
  }
  if (*c.status != Status::Ok) {
    out.reward = s.fail_value;
    return out;
  }

  if (s.kind == SchemeKind::Correctness) {
    // Verification alone decides; whatever timings exist are reported.
    out.correct = true;
    out.reward = s.slower_value;
    const auto& t = c.timings;
    if (t.eager && t.candidate) out.speedup_eager = ratio(statOf(*t.eager, s.stat), statOf(*t.candidate, s.stat));
    if (t.compile && t.candidate)
      out.speedup_compile = ratio(statOf(*t.compile, s.stat), statOf(*t.candidate, s.stat));
    return out;
  }

  // A correct candidate is scored only when every value its reward and the
  // run table read is there; a guess would be a silent default.
  std::string sname(statName(s.stat));
  auto need = [&](const std::optional<Timing>& t, const std::string& name) {
    std::string missing;
    auto add = [&](const std::string& field) { missing += (missing.empty() ? "" : ", ") + field; };
    if (!t) return name;
    if (std::isnan(statOf(*t, s.stat))) add(name + "." + sname + "_ms");
    if (s.noise_aware) {
      if (name == "candidate" && std::isnan(t->ci95_high_ms)) add(name + ".ci95_high_ms");
      if (name != "candidate" && std::isnan(t->ci95_low_ms)) add(name + ".ci95_low_ms");
    }
    return missing;
  };
  for (auto [t, name] : {std::pair{&c.timings.eager, "eager"}, std::pair{&c.timings.compile, "compile"},
                         std::pair{&c.timings.candidate, "candidate"}}) {
    std::string m = need(*t, name);
    if (!m.empty()) out.missing += (out.missing.empty() ? "" : ", ") + m;
  }
  if (!out.missing.empty()) {
    out.excluded = "missing_timings";
    return out;
  }

  const Timing& e = *c.timings.eager;
  const Timing& k = *c.timings.compile;
  const Timing& x = *c.timings.candidate;
  out.correct = true;
  out.speedup_eager = ratio(statOf(e, s.stat), statOf(x, s.stat));
  out.speedup_compile = ratio(statOf(k, s.stat), statOf(x, s.stat));
  out.conservative_speedup_eager = ratio(e.ci95_low_ms, x.ci95_high_ms);
  out.conservative_speedup_compile = ratio(k.ci95_low_ms, x.ci95_high_ms);
  out.faster_than_eager = beats(c.timings, Baseline::Eager, s.margin, s.stat, s.noise_aware);
  out.faster_than_compile = beats(c.timings, Baseline::Compile, s.margin, s.stat, s.noise_aware);

  switch (s.kind) {
    case SchemeKind::Milestone:
      // Eq. 1: 3 if b(t, eager) and b(t, compile); 2 if b(t, eager) only; 1 otherwise.
      if (out.faster_than_eager && out.faster_than_compile)
        out.reward = s.both_value;
      else if (out.faster_than_eager)
        out.reward = s.eager_value;
      else
        out.reward = s.slower_value;
      break;
    case SchemeKind::Correctness:  // decided above
      break;
    case SchemeKind::Speedup:
    case SchemeKind::LogSpeedup: {
      bool eager = s.speedup_baseline == Baseline::Eager;
      double sp = s.noise_aware
                      ? (eager ? out.conservative_speedup_eager : out.conservative_speedup_compile)
                      : (eager ? out.speedup_eager : out.speedup_compile);
      out.reward = s.kind == SchemeKind::Speedup ? sp : std::log(sp);
      break;
    }
  }
  return out;
}

void noteExclusion(const Candidate& c, const Score& s, WarningList& warn) {
  std::string who = c.solution_hash.empty() ? c.task_id
                                            : c.task_id + " (" + c.solution_hash.substr(0, 12) + ")";
  if (s.excluded == "missing_timings")
    warn.add("missing_timings", "correct candidates without the timings the scheme needs (excluded)",
             who + " [" + s.missing + "]");
  else if (s.excluded == "unknown_status")
    warn.add("unknown_status", "candidates with a status outside the closed set (excluded)",
             who + " (\"" + c.input_status + "\")");
  else if (s.excluded == "missing_status")
    warn.add("missing_status", "candidates without a status (excluded)", who);
}

}  // namespace kb::reward
