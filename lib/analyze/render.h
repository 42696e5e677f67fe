// How a static check is shown: clang-style text for people, JSON for the
// other tools (docs/kbcheck.md), SARIF 2.1.0 for CI systems.
#pragma once

#include <ostream>
#include <string>

#include "analyze/analyze.h"
#include "core/json.h"
#include "core/report.h"

namespace kb::analyze {

// The status a static check ends with: infra_error if the checker could
// not run, else static_violation if any error-level finding, else ok (a
// source Clang could not parse gives parser-limit notes, never a failure).
Status staticStatus(const StaticResult& result);

// "file:line:col: error: [rule] message", the source line and a caret.
void printDiagnostics(std::ostream& out, const StaticResult& result, const std::string& root_display);

Json staticReportJson(const ReportHeader& header, const solution::Solution& solution, const StaticPolicy& policy,
                      const StaticResult& result);

Json sarifJson(const solution::Solution& solution, const StaticResult& result);

}  // namespace kb::analyze
