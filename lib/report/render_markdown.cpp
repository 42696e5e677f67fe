// Markdown, to paste into a paper draft or a pull request.
#include "report/render.h"

namespace kb::report {

namespace {

// A '|' inside a cell would end it.
std::string cell(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string warningsBlock(const std::vector<Warning>& ws) {
  if (ws.empty()) return "";
  std::string out = "\n**Warnings**\n\n";
  for (const Warning& w : ws) out += "- " + cell(formatWarning(w)) + "\n";
  return out;
}

}  // namespace

std::string renderMarkdownTable(const Table& t) {
  std::string out = "|";
  for (const std::string& h : t.header) out += " " + cell(h) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i) out += t.numeric[i] ? " ---: |" : " :--- |";
  out += "\n";
  for (const auto& row : t.rows) {
    bool total = t.last_is_total && &row == &t.rows.back();
    out += "|";
    for (const std::string& c : row) out += total ? " **" + cell(c) + "** |" : " " + cell(c) + " |";
    out += "\n";
  }
  return out;
}

std::string renderMarkdown(const RunReport& r) {
  const Scheme& s = r.options.scheme;
  std::string out = "### " + cell(r.options.title) + "\n\n";
  out += std::to_string(r.all.results) + " tasks (" + std::to_string(r.all.excluded) +
         " excluded); reward `" + std::string(schemeName(s.kind)) + "`, margin " +
         fmtThreshold(100 * s.margin) + "%, " + std::string(statName(s.stat)) +
         (s.noise_aware ? ", noise-aware" : "") + "; faster-than rates at margin " +
         fmtThreshold(100 * r.options.rate_margin) + "%";
  if (s.kind == SchemeKind::Correctness) out += "; correctness only (untimed)";
  if (!r.gpu.empty()) out += "; GPU " + cell(r.gpu);
  if (!r.timing_method.empty()) out += "; timing `" + r.timing_method + "`";
  if (!r.precision_contract.empty()) out += "; precision contract `" + r.precision_contract + "`";
  out += ".\n\n";
  out += renderMarkdownTable(summaryTable(r));
  out += "\nRates are over scored tasks (infra errors and unreadable records excluded); geometric "
         "means over correct tasks; fast_p is KernelBench's, over eager.\n";
  out += warningsBlock(r.warnings);
  return out;
}

std::string renderMarkdown(const Comparison& c) {
  auto name = [](const RunReport& r) {
    std::string s;
    for (const std::string& n : r.sources) s += (s.empty() ? "`" : ", `") + n + "`";
    return s;
  };
  std::string out = "### " + cell(c.a.options.title) + "\n\nA = " + name(c.a) + ", B = " + name(c.b) +
                    ".\n\n";
  out += renderMarkdownTable(compareTable(c));
  out += "\nPer task (over " + std::string(baselineName(c.a.options.primary)) + "):";
  bool first = true;
  for (const auto& [kind, n] : c.changes) {
    out += std::string(first ? " " : ", ") + kind + " " + std::to_string(n);
    first = false;
  }
  out += ".\n";
  Table changed = changedTasksTable(c);
  if (!changed.rows.empty()) out += "\n" + renderMarkdownTable(changed);
  std::vector<Warning> ws = c.a.warnings;
  for (Warning w : c.b.warnings) {
    w.what += " (B)";
    ws.push_back(std::move(w));
  }
  out += warningsBlock(ws);
  return out;
}

}  // namespace kb::report
