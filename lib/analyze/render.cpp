#include "analyze/render.h"

#include "analyze/rule.h"
#include "kb_config.h"

namespace kb::analyze {
namespace {

const char* severityName(Severity s) {
  return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note";
}

}  // namespace

Status staticStatus(const StaticResult& r) {
  if (r.infra_failed) return Status::InfraError;
  if (r.errorCount() > 0) return Status::StaticViolation;
  // A source Clang could not parse is a parser-limit note, not a failure:
  // nvcc may accept it, and `kbcheck build` decides (docs/rules/parser-limit.md).
  return Status::Ok;
}

void printDiagnostics(std::ostream& out, const StaticResult& r, const std::string& root) {
  for (const auto& f : r.findings) {
    out << root << f.file;
    if (f.line) out << ':' << f.line << ':' << f.column;
    out << ": " << severityName(f.severity) << ": [" << f.rule << "] " << f.message << '\n';
    if (!f.source_line.empty()) {
      out << "  " << f.source_line << '\n';
      std::string caret(f.column > 0 ? f.column - 1 : 0, ' ');
      for (size_t i = 0; i < caret.size() && i < f.source_line.size(); ++i)
        if (f.source_line[i] == '\t') caret[i] = '\t';
      out << "  " << caret << "^\n";
    }
  }
  for (const auto& e : r.parse_errors) out << e;
}

Json staticReportJson(const ReportHeader& header, const solution::Solution& solution, const StaticPolicy& policy,
                      const StaticResult& r) {
  Json j = headerToJson(header);
  j["duration_s"] = r.seconds;
  j["policy"] = {{"name", policy.name}, {"hash", policy.source_hash}};
  Json files = Json::array();
  for (const auto& f : solution.files) {
    const char* kind = f.kind == solution::SourceKind::CudaSource  ? "cuda"
                       : f.kind == solution::SourceKind::CxxSource ? "cxx"
                       : f.kind == solution::SourceKind::Header    ? "header"
                                                         : "other";
    files.push_back({{"path", f.path}, {"kind", kind}, {"bytes", f.size}});
  }
  j["files"] = files;
  j["translation_units"] = r.translation_units;
  j["counts"] = {{"error", r.errorCount()}, {"warning", r.warningCount()}};
  Json findings = Json::array();
  for (const auto& f : r.findings)
    findings.push_back({{"rule", f.rule},
                        {"severity", severityName(f.severity)},
                        {"file", f.file},
                        {"line", f.line},
                        {"column", f.column},
                        {"message", f.message},
                        {"source_line", f.source_line}});
  j["findings"] = findings;
  j["compile_errors"] = r.parse_errors;
  if (r.infra_failed) j["infra_message"] = r.infra_message;
  j["pch_fallback"] = r.pch_fallback;
  Json kernels = Json::array(), launches = Json::array(), calls = Json::array();
  for (const auto& k : r.inventory.kernels)
    kernels.push_back({{"name", k.name}, {"file", k.file}, {"line", k.line}, {"template", k.is_template}});
  for (const auto& l : r.inventory.launches)
    launches.push_back({{"kernel", l.kernel}, {"file", l.file}, {"line", l.line}, {"column", l.column},
                        {"grid", l.grid}, {"block", l.block}, {"shared_mem", l.shared_mem},
                        {"stream", l.stream}});
  for (const auto& c : r.inventory.library_calls)
    calls.push_back({{"library", c.library}, {"function", c.function}, {"file", c.file},
                     {"line", c.line}, {"column", c.column}});
  j["inventory"] = {{"kernels", kernels}, {"launches", launches}, {"library_calls", calls}};
  return j;
}

Json sarifJson(const solution::Solution& solution, const StaticResult& r) {
  Json rules = Json::array();
  for (const auto& info : allRules())
    rules.push_back({{"id", info.id},
                     {"shortDescription", {{"text", info.summary}}},
                     {"helpUri", std::string("docs/rules/") + info.id + ".md"}});
  Json results = Json::array();
  for (const auto& f : r.findings) {
    Json region = Json::object();
    if (f.line) region = {{"startLine", f.line}, {"startColumn", std::max(1u, f.column)}};
    Json physical = {{"artifactLocation", {{"uri", f.file}, {"uriBaseId", "SOLUTION"}}}};
    if (f.line) physical["region"] = region;
    results.push_back({{"ruleId", f.rule},
                       {"level", severityName(f.severity)},
                       {"message", {{"text", f.message}}},
                       {"locations", Json::array({{{"physicalLocation", physical}}})}});
  }
  for (const auto& e : r.parse_errors)
    results.push_back({{"ruleId", "parser-limit"}, {"level", "note"}, {"message", {{"text", e}}}});
  Json run = {
      {"tool", {{"driver", {{"name", "kbcheck"}, {"version", KB_VERSION},
                             {"informationUri", "docs/kbcheck.md"}, {"rules", rules}}}}},
      {"originalUriBaseIds", {{"SOLUTION", {{"uri", "file://" + solution.root.string() + "/"}}}}},
      {"results", results}};
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", Json::array({run})}};
}

}  // namespace kb::analyze
