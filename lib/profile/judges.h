// kbprof's run-time judges (docs/judges/): each one defence, judged from
// figures that left the candidate's worker before its code could touch
// them (docs/threat-model.md, "Why each figure is trustworthy"), each with
// its doc page and its tests (tests/profile/judges_test.cpp), in one
// registry, applied in registry order by PreparedProfile::run. The static
// rules are the same shape (lib/analyze/rules, docs/rules).
//
// Torch- and CUDA-free: every judge is tested on the CPU with hand-made
// figures.
#pragma once

#include <string>
#include <vector>

#include "core/report.h"
#include "profile/plausibility.h"
#include "profile/precision.h"
#include "profile/provenance.h"

namespace kb::profile {

// A judge's verdict: ok, or a status (hack_detected, incorrect) with a
// one-line message and the evidence it rests on.
struct Judgement {
  std::string judge;                  // the registry id
  Status status = Status::Ok;
  std::string message;
  std::vector<std::string> evidence;
  bool ok() const { return status == Status::Ok; }
};

struct JudgeInfo {
  const char* id;    // "imports", "protocol", ...
  const char* doc;   // docs/judges/<id>.md
  const char* what;  // one line
};
// Every run-time judge, in the order a profile applies them.
const std::vector<JudgeInfo>& runtimeJudges();

// imports: the solution library's ELF imports (elf_symbols.h's
// forbiddenImports: torch/ATen/c10 symbols, the dynamic loader's look-ups).
Judgement judgeImports(const std::vector<std::string>& forbidden);

// protocol: the timed-call protocol as kbprof paced it (pacing.h): a
// violation, or a loop that did not end as the harness ends it.
Judgement judgeProtocol(const std::string& violation, bool done, std::size_t commits, std::size_t paced);

// provenance: provenance.h's findings (harness-id first).
Judgement judgeProvenance(const ProvenanceReport& report);

// precision: the precision contract's findings (precision.h).
Judgement judgePrecision(const PrecisionReport& report);

// timers: per timed call, the events must lie within the host's reading
// and kbprof's own window (+0.05 ms each), and the CUPTI busy time (the
// union of the call's intervals) within the events (x1.10 + 0.01 ms); more
// than max(2, 10%) inconsistent calls is hack_detected. Empty `host`,
// `busy` or `window` are not checked.
Judgement judgeTimers(const std::vector<double>& event_ms, const std::vector<double>& host_ms,
                      const std::vector<double>& busy_ms, const std::vector<double>& window_ms);

// The parent's lower bound on a timed call's own time: its window less the
// longest null call's (everything but the call itself that the window
// holds: the head start, the socket round trips). Never below 0; 0 without
// null calls.
double parentLowerBoundMs(double window_ms, const std::vector<double>& null_windows_ms);

// parent clock: not a verdict but a bound. Each call's time is the larger
// of its events and its window less the longest null call's; `bounded`
// counts the calls raised.
std::vector<double> boundByParentClock(const std::vector<double>& event_ms, const std::vector<double>& window_ms,
                                       const std::vector<double>& null_window_ms, std::size_t* bounded);

// plausibility: the candidate's median against the physical floor
// (plausibility.h).
Judgement judgePlausibility(const Plausibility& p);

}  // namespace kb::profile
