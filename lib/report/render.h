// The four faces of a run report (terminal table, JSON, Markdown, one HTML
// page with SVG charts) and the JSON of a scored candidate. Every field and
// column is documented in docs/kbreward.md.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "report/aggregate.h"
#include "reward/reward.h"

namespace kb::report {

// A table as text cells, shared by the text, Markdown and HTML renderers so
// that they cannot disagree on a value.
struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned columns
  std::vector<std::vector<std::string>> rows;
  bool last_is_total = false;  // set a rule above the last row
};

// group | tasks | excluded | pass | > eager | > compile | geomean eager |
// geomean compile | fast_p (over eager) ... | mean reward
Table summaryTable(const RunReport& r);
// fast_p at each threshold over both baselines, one row per group.
Table fastPTable(const RunReport& r);
// group | metric | A | B | change
Table compareTable(const Comparison& c);
// task | group | change | A | B | B/A (tasks whose outcome changed)
Table changedTasksTable(const Comparison& c);

// "90.9%", "-" for NaN.
std::string fmtPercent(double fraction);
// "2.11x", "-" for NaN.
std::string fmtSpeedup(double x);
// Fixed decimals, "-" for NaN.
std::string fmtFixed(double x, int decimals);
// 1.5 -> "1.5", 2 -> "2": threshold labels.
std::string fmtThreshold(double p);

// The report files a run was read from, for a heading: up to three named;
// more as "67 files under DIR" (their common folder) or "67 files".
std::string describeSources(const std::vector<std::string>& sources);

// Space-padded columns, numbers right-aligned.
std::string renderTable(const Table& t);
std::string renderMarkdownTable(const Table& t);

std::string renderText(const RunReport& r);
std::string renderText(const Comparison& c);
std::string renderMarkdown(const RunReport& r);
std::string renderMarkdown(const Comparison& c);
Json reportToJson(const RunReport& r);
Json comparisonToJson(const Comparison& c);
std::string renderHtml(const RunReport& r);
std::string renderHtml(const Comparison& c);

// One line of `kbreward score` output.
Json scoreToJson(const Candidate& c, const Score& s, const Scheme& scheme);
Json warningToJson(const Warning& w);

}  // namespace kb::report
