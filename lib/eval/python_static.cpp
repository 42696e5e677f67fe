// The static stage of a Python-format solution: scripts/pycheck.py's rules
// (docs/rules/python.md) over its .py files, reported in the Clang
// checker's form (analyze::StaticResult), so that the static report, its
// rendering and the verdict are the same for every format. The script
// parses the code with Python's ast and never runs it.
#include "eval/python_static.h"

#ifdef KB_HAVE_CLANG
#include "analyze/render.h"
#include "core/clock.h"
#include "python/scripts.h"

namespace kb::eval {

analyze::StaticResult checkPythonSolution(const solution::Solution& solution, const analyze::StaticPolicy& policy) {
  auto t0 = Clock::now();
  analyze::StaticResult result;
  auto severity = [&](const std::string& rule) {
    auto it = policy.python_rules.find(rule);
    return it == policy.python_rules.end() ? std::string("error") : it->second;
  };
  std::vector<std::string> args = {solution.root.string()};
  for (const auto& f : solution.files)
    if (f.kind == solution::SourceKind::Python) args.push_back(f.path);
  // pycheck.py marks torch compute at the policy's severity (it needs the
  // severity to look for it at all); every other rule is filtered here.
  args.push_back("--torch-compute");
  args.push_back(severity("py-torch-compute"));
  python::ScriptResult run;
  try {
    run = python::runScript(python::pythonPath(), "pycheck.py", args);
  } catch (const std::exception& e) {
    result.infra_failed = true;
    result.infra_message = std::string("the Python checker could not start: ") + e.what();
    return result;
  }
  bool done = false;
  for (const Json& line : run.lines) {
    if (line.contains("parse_error")) {
      // Unlike a C++ source Clang cannot parse (a parser-limit note; nvcc
      // decides), a Python file the rules cannot read fails: CPython's own
      // parser is the one that runs it, so nothing legitimate is lost, and a
      // file made to defeat the checker (nesting past the recursion limit)
      // is the file's fault, never an infra_error.
      const std::string text = line["parse_error"].get<std::string>();
      result.parse_errors.push_back(text);
      analyze::Finding f;
      f.rule = "py-unreadable";
      f.severity = severity(f.rule) == "warning" ? analyze::Severity::Warning : analyze::Severity::Error;
      f.file = text.substr(0, text.find(':'));
      f.message = "the Python rules cannot read this file: " + text.substr(text.find("error: ") == std::string::npos
                                                                               ? 0
                                                                               : text.find("error: ") + 7);
      if (severity(f.rule) != "off") result.findings.push_back(std::move(f));
    } else if (line.value("done", false)) {
      done = true;
    } else if (line.contains("rule")) {
      analyze::Finding f;
      f.rule = line["rule"].get<std::string>();
      std::string sev = f.rule == "py-torch-compute" ? line.value("severity", "error") : severity(f.rule);
      if (sev == "off") continue;
      f.severity = sev == "warning" ? analyze::Severity::Warning : analyze::Severity::Error;
      f.file = line.value("file", "");
      f.line = line.value("line", 0u);
      f.column = line.value("column", 0u);
      f.message = line.value("message", "");
      f.source_line = line.value("source_line", "");
      result.findings.push_back(std::move(f));
    }
  }
  if (!done) {
    result.infra_failed = true;
    result.infra_message = "the Python checker ended early (exit " + std::to_string(run.exit_code) + ")";
  }
  std::stable_sort(result.findings.begin(), result.findings.end(), [](const analyze::Finding& a, const analyze::Finding& b) {
    return std::tie(a.file, a.line, a.column, a.rule) < std::tie(b.file, b.line, b.column, b.rule);
  });
  result.translation_units = static_cast<unsigned>(args.size() - 3);
  result.seconds = since(t0);
  return result;
}

}  // namespace kb::eval
#endif
