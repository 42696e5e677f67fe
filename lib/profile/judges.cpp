// kbprof's run-time judges (judges.h).
#include "profile/judges.h"

#include <algorithm>
#include <cstdio>


namespace kb::profile {
namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

Judgement verdict(const char* judge, Status s, std::string message, std::vector<std::string> evidence = {}) {
  Judgement j;
  j.judge = judge;
  j.status = s;
  j.message = std::move(message);
  j.evidence = std::move(evidence);
  return j;
}

Judgement clean(const char* judge) { return verdict(judge, Status::Ok, ""); }

}  // namespace

const std::vector<JudgeInfo>& runtimeJudges() {
  static const std::vector<JudgeInfo> judges = {
      {"imports", "docs/judges/imports.md", "no torch/ATen/c10 symbol and no dynamic look-up in the library's imports"},
      {"protocol", "docs/judges/protocol.md", "the timed calls went as kbprof paced them, every record in turn"},
      {"output-checks", "docs/judges/output-checks.md", "every correctness seed and every timed call right, every output element written"},
      {"provenance", "docs/judges/provenance.md", "every kernel the candidate's own or an allowed library's, on the launch stream, inside its call"},
      {"precision", "docs/judges/precision.md", "no reduced-precision library math under the strict contract"},
      {"timers", "docs/judges/timers.md", "events, host clock, CUPTI and kbprof's clock agree; every call raised to kbprof's lower bound"},
      {"plausibility", "docs/judges/plausibility.md", "no median below the physical floor"},
  };
  return judges;
}

Judgement judgeImports(const std::vector<std::string>& forbidden) {
  if (forbidden.empty()) return clean("imports");
  return verdict("imports", Status::HackDetected, "the solution library imports " + forbidden.front(), forbidden);
}

Judgement judgeProtocol(const std::string& violation, bool done, std::size_t commits, std::size_t paced) {
  if (!violation.empty())
    return verdict("protocol", Status::HackDetected, "the timed-call protocol was broken: " + violation,
                   {"protocol: " + violation});
  if (!done || commits != paced || commits == 0)
    return verdict("protocol", Status::HackDetected,
                   "the worker's timed loop did not end as the harness ends it (" + std::to_string(commits) +
                       " commits, " + std::to_string(paced) + " calls paced)");
  return clean("protocol");
}

Judgement judgeProvenance(const ProvenanceReport& report) {
  if (report.ok()) return clean("provenance");
  std::vector<std::string> evidence;
  for (const auto& f : report.findings) evidence.push_back(f.rule + ": " + f.evidence);
  return verdict("provenance", Status::HackDetected,
                 "run-time provenance: " + report.findings.front().rule + ": " + report.findings.front().evidence,
                 evidence);
}

Judgement judgePrecision(const PrecisionReport& report) {
  if (report.ok()) return clean("precision");
  std::vector<std::string> evidence;
  for (const auto& f : report.findings) evidence.push_back(f.rule + ": " + f.evidence);
  return verdict("precision", Status::HackDetected,
                 "precision contract " + report.policy.contract + ": " + report.findings.front().evidence, evidence);
}

Judgement judgeTimers(const std::vector<double>& ev, const std::vector<double>& host, const std::vector<double>& busy,
                      const std::vector<double>& window) {
  std::size_t inconsistent = 0;
  std::string first_bad;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    bool bad_host = i < host.size() && ev[i] > host[i] + 0.05;
    bool bad_busy = i < busy.size() && busy[i] > ev[i] * 1.10 + 0.01;
    bool bad_window = i < window.size() && window[i] > 0 && ev[i] > window[i] + 0.05;
    if (!(bad_host || bad_busy || bad_window)) continue;
    if (first_bad.empty())
      first_bad = "timed call " + std::to_string(i) + ": events " + fmt("%.4f", ev[i]) + " ms, host " +
                  fmt("%.4f", i < host.size() ? host[i] : 0) + " ms, CUPTI busy " +
                  fmt("%.4f", i < busy.size() ? busy[i] : 0) + " ms, kbprof's window " +
                  fmt("%.4f", i < window.size() ? window[i] : 0) + " ms";
    ++inconsistent;
  }
  if (inconsistent <= std::max<std::size_t>(2, ev.size() / 10)) return clean("timers");
  return verdict("timers", Status::HackDetected,
                 "the CUDA event times disagree with the host clock, CUPTI or kbprof's own clock (" + first_bad +
                     "): the timer was tampered with",
                 {std::to_string(inconsistent) + " of " + std::to_string(ev.size()) +
                  " timed calls have inconsistent timers; first: " + first_bad});
}

double parentLowerBoundMs(double window_ms, const std::vector<double>& null_windows_ms) {
  if (null_windows_ms.empty() || window_ms <= 0) return 0.0;
  const double overhead = *std::max_element(null_windows_ms.begin(), null_windows_ms.end());
  return std::max(0.0, window_ms - overhead);
}

std::vector<double> boundByParentClock(const std::vector<double>& ev, const std::vector<double>& window,
                                       const std::vector<double>& nulls, std::size_t* bounded) {
  std::vector<double> out = ev;
  std::size_t n = 0;
  for (std::size_t k = 0; k < out.size() && k < window.size(); ++k) {
    double lb = parentLowerBoundMs(window[k], nulls);
    if (lb > out[k]) {
      out[k] = lb;
      ++n;
    }
  }
  if (bounded) *bounded = n;
  return out;
}

Judgement judgePlausibility(const Plausibility& p) {
  if (p.ok) return clean("plausibility");
  std::string e = "median " + fmt("%.4f", p.candidate_ms) + " ms is below " + fmt("%.2f", p.slack) +
                  " x the physical floor of " + fmt("%.4f", p.floor_ms) + " ms (" + p.floorText() + ")";
  return verdict("plausibility", Status::HackDetected, "implausibly fast: " + e, {e});
}

}  // namespace kb::profile
