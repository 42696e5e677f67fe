#include "report/commands.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <iterator>
#include <utility>

#include "core/error.h"
#include "core/file.h"
#include "reward/input.h"
#include "report/render.h"

namespace kb::report {
namespace {

using reward::assemble;
using reward::RawInput;
using reward::RawRecord;
using reward::parseText;
using reward::readPath;

RawInput readInputs(const std::vector<std::string>& paths) {
  RawInput raw;
  if (paths.empty() || (paths.size() == 1 && paths[0] == "-")) {
    if (paths.empty() && isatty(STDIN_FILENO))
      throw UsageError("no input: name files or directories, or pipe JSONL into stdin (kbreward --help)");
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    parseText(text, "-", raw);
    return raw;
  }
  for (const std::string& p : paths) {
    if (p == "-") {
      std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
      parseText(text, "-", raw);
    } else {
      readPath(p, raw);
    }
  }
  return raw;
}

// --check / --prof: the same reader, plus a check that the file holds what
// the flag says, since a swapped pair would otherwise score quietly wrong.
void addTyped(RawInput& raw, const std::string& path, const std::string& tool, const std::string& flag) {
  RawInput one;
  readPath(path, one);
  for (const RawRecord& r : one.records) {
    auto it = r.json.find("tool");
    std::string got = it != r.json.end() && it->is_string() ? it->get<std::string>() : "";
    if (got != tool)
      throw UsageError(r.origin + ": " + flag + " expects " + tool + " reports, found tool \"" + got +
                           "\"");
  }
  for (RawRecord& r : one.records) raw.records.push_back(std::move(r));
  raw.unparsable.insert(raw.unparsable.end(), one.unparsable.begin(), one.unparsable.end());
  raw.not_objects.insert(raw.not_objects.end(), one.not_objects.begin(), one.not_objects.end());
  raw.sources.insert(raw.sources.end(), one.sources.begin(), one.sources.end());
}

// --tasks: folders of task bundles (ROOT/<task_id>/task.json).
std::vector<std::filesystem::path> taskRoots(const std::vector<std::string>& tasks) {
  std::vector<std::filesystem::path> roots;
  for (const std::string& t : tasks) {
    if (!std::filesystem::is_directory(t)) throw UsageError("--tasks " + t + ": not a folder of task bundles");
    roots.emplace_back(t);
  }
  return roots;
}

void printWarnings(const std::vector<Warning>& ws) {
  for (const Warning& w : ws) std::cerr << "kbreward: warning: " << formatWarning(w) << "\n";
}

bool toStdout(const std::string& path) { return path.empty() || path == "-"; }

// A file is written to a temporary beside it and renamed over it
// (writeFileAtomic): a reader never sees half a report, and two writers
// never mix.
void writeOutput(const std::string& path, const std::string& text) {
  if (toStdout(path)) {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) throw Error("error writing stdout");
    return;
  }
  writeFileAtomic(path, text);
}

// JSON to stdout is one object per line (docs/cli.md); a file gets it indented.
std::string jsonText(const Json& j, const std::string& path) {
  return (toStdout(path) ? j.dump() : j.dump(2)) + "\n";
}

std::string formatFromPath(const std::string& path) {
  auto ends = [&](const char* suffix) {
    std::string s(suffix);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".html") || ends(".htm")) return "html";
  if (ends(".md") || ends(".markdown")) return "markdown";
  if (ends(".json")) return "json";
  return "text";
}

// A run report or a comparison in one of the formats (text, json, markdown, html).
template <class Report>
void writeRendered(const std::string& path, const std::string& format, const Report& r,
                   Json (*toJson)(const Report&)) {
  if (format == "json")
    writeOutput(path, jsonText(toJson(r), path));
  else if (format == "markdown")
    writeOutput(path, renderMarkdown(r));
  else if (format == "html")
    writeOutput(path, renderHtml(r));
  else
    writeOutput(path, renderText(r));
}

}  // namespace

int runScore(const ScoreCommand& cmd) {
  const Scheme& scheme = cmd.scheme;
  RawInput raw;
  if (cmd.inputs.empty() && (!cmd.check_files.empty() || !cmd.prof_files.empty())) {
    // --check/--prof alone: no stdin.
  } else {
    raw = readInputs(cmd.inputs);
  }
  for (const std::string& f : cmd.check_files) addTyped(raw, f, "kbcheck", "--check");
  for (const std::string& f : cmd.prof_files) addTyped(raw, f, "kbprof", "--prof");
  Input in = assemble(std::move(raw), taskRoots(cmd.tasks));
  WarningList warn;
  for (const Warning& w : in.warnings) warn.append(w);
  std::string out;
  std::size_t scored = 0;
  for (const Candidate& c : in.candidates) {
    Score s = score(c, scheme);
    noteExclusion(c, s, warn);
    if (s.reward) ++scored;
    out += scoreToJson(c, s, scheme).dump() + "\n";
  }
  writeOutput(cmd.out, out);
  printWarnings(warn.list());
  if (scored == 0) {
    std::cerr << "kbreward: no candidate could be scored (" << in.candidates.size() << " excluded)\n";
    return 1;
  }
  return cmd.strict && !warn.list().empty() ? 1 : 0;
}

int runReport(const ReportCommand& cmd) {
  std::string format = cmd.format.empty() ? formatFromPath(cmd.out) : cmd.format;
  ReportOptions ropts = cmd.options;
  if (!cmd.compare.empty()) {
    if (!cmd.title_given) ropts.title = "kbreward comparison";
    if (!cmd.inputs.empty())
      throw UsageError("--compare takes its two runs itself; drop the other inputs");
    RunReport a = aggregate(assemble(readInputs({cmd.compare[0]}), taskRoots(cmd.tasks)), ropts);
    RunReport b = aggregate(assemble(readInputs({cmd.compare[1]}), taskRoots(cmd.tasks)), ropts);
    for (auto* r : {&a, &b}) {
      std::vector<Warning> ws = r->warnings;
      for (Warning& w : ws) w.what += r == &a ? " (in A)" : " (in B)";
      printWarnings(ws);
    }
    bool warned = !a.warnings.empty() || !b.warnings.empty();
    Comparison c = compare(std::move(a), std::move(b));
    writeRendered(cmd.out, format, c, comparisonToJson);
    return cmd.strict && warned ? 1 : 0;
  }

  RunReport r = aggregate(assemble(readInputs(cmd.inputs), taskRoots(cmd.tasks)), ropts);
  printWarnings(r.warnings);
  writeRendered(cmd.out, format, r, reportToJson);
  if (r.all.scored == 0) {
    std::cerr << "kbreward: no task could be scored (" << r.all.results << " excluded)\n";
    return 1;
  }
  return cmd.strict && !r.warnings.empty() ? 1 : 0;
}

}  // namespace kb::report
