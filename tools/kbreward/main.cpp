// kbreward: the command line over lib/reward. It parses flags, reads the
// inputs, and calls the library; all logic lives in lib/reward.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "kb_config.h"
#include "reward/aggregate.h"
#include "reward/input.h"
#include "reward/render.h"
#include "reward/reward.h"

namespace {

using namespace kb::reward;

constexpr const char* kFooter = R"(
Rewards (eq. 1 of the CUDA Agent paper), with b(t, t0) = [(t0 - t) / t0 > margin]:
  -1  failed to compile or verify, or a hack was detected (static_violation,
      compile_error, runtime_error, timeout, crash, incorrect, hack_detected)
   3  b(t, eager) and b(t, compile)      2  b(t, eager) only      1  otherwise
  infra_error gives no reward at all: the record is marked and excluded.
  --noise-aware decides b() on the 95% confidence intervals instead:
  b = [(ci95_low(t0) - ci95_high(t)) / ci95_low(t0) > margin].

Input: kbcheck and kbprof reports (joined by task_id and solution_hash) or
combined per-candidate records, as JSON files, JSON arrays, JSONL, or
directories of them; no file (or "-") reads stdin.

Examples:
  kbreward --check check.json --prof prof.json
  cat results.jsonl | kbreward score --noise-aware > rewards.jsonl
  kbreward report results/                      (aligned table)
  kbreward report results.jsonl -o run.html     (one page with charts)
  kbreward report --compare run1/ run2/ --format markdown

Exit status: 0 done; 1 nothing could be scored, or a warning under --strict;
2 bad usage, unreadable or empty input, an output that cannot be written
(checked before any input is read); 3 an internal or I/O fault.
docs/kbreward.md writes out every formula and every output field.)";

struct SchemeFlags {
  std::string scheme = "milestone";
  std::string stat = "median";
  std::string speedup_baseline = "compile";
  Scheme s;

  Scheme build() const {
    Scheme out = s;
    out.kind = *parseSchemeName(scheme);
    out.stat = *parseStatName(stat);
    out.speedup_baseline = *parseBaselineName(speedup_baseline);
    return out;
  }
};

void addSchemeOptions(CLI::App* cmd, SchemeFlags& f) {
  cmd->add_option("--scheme", f.scheme, "Reward: milestone (eq. 1), speedup (t0/t), log-speedup (ln t0/t)")
      ->check(CLI::IsMember(schemeNames()))
      ->capture_default_str();
  cmd->add_option("--margin", f.s.margin, "b(t, t0) holds when (t0 - t)/t0 > margin")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  cmd->add_flag("--noise-aware", f.s.noise_aware,
                "Decide b() on the 95% confidence intervals, not on a lucky median");
  cmd->add_option("--stat", f.stat, "Which statistic is t: median, mean or min")
      ->check(CLI::IsMember({"median", "mean", "min"}))
      ->capture_default_str();
  cmd->add_option("--fail-value", f.s.fail_value, "Reward of a failure or hack")->capture_default_str();
  cmd->add_option("--slower-value", f.s.slower_value, "Milestone: correct, not faster than eager")
      ->capture_default_str();
  cmd->add_option("--eager-value", f.s.eager_value, "Milestone: faster than eager only")
      ->capture_default_str();
  cmd->add_option("--both-value", f.s.both_value, "Milestone: faster than eager and compile")
      ->capture_default_str();
  cmd->add_option("--speedup-baseline", f.speedup_baseline, "t0 of speedup and log-speedup: eager or compile")
      ->check(CLI::IsMember({"eager", "compile"}))
      ->capture_default_str();
}

RawInput readInputs(const std::vector<std::string>& paths) {
  RawInput raw;
  if (paths.empty() || (paths.size() == 1 && paths[0] == "-")) {
    if (paths.empty() && isatty(STDIN_FILENO))
      throw kb::UsageError("no input: name files or directories, or pipe JSONL into stdin (kbreward --help)");
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
      throw kb::UsageError(r.origin + ": " + flag + " expects " + tool + " reports, found tool \"" + got +
                           "\"");
  }
  for (RawRecord& r : one.records) raw.records.push_back(std::move(r));
  raw.unparsable.insert(raw.unparsable.end(), one.unparsable.begin(), one.unparsable.end());
  raw.not_objects.insert(raw.not_objects.end(), one.not_objects.begin(), one.not_objects.end());
  raw.sources.insert(raw.sources.end(), one.sources.begin(), one.sources.end());
}

void printWarnings(const std::vector<Warning>& ws) {
  for (const Warning& w : ws) std::cerr << "kbreward: warning: " << formatWarning(w) << "\n";
}

bool toStdout(const std::string& path) { return path.empty() || path == "-"; }

// -o checked before any work (kb::tools::checkWritableFile: exit 2, not
// after the whole run); the file is then written to a temporary beside it
// and renamed over it (writeFileAtomic): a reader never sees half a report,
// and two writers never mix.
void checkWritable(const std::string& path) { kb::tools::checkWritableFile(path, "-o/--out"); }

void writeOutput(const std::string& path, const std::string& text) {
  if (toStdout(path)) {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) throw kb::Error("error writing stdout");
    return;
  }
  kb::tools::writeFileAtomic(path, text);
}

// JSON to stdout is one object per line (docs/cli.md); a file gets it indented.
std::string jsonText(const kb::Json& j, const std::string& path) {
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

int run(int argc, char** argv) {
  // `score` is the default subcommand: `kbreward --check a --prof b` scores.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || (args[0] != "score" && args[0] != "report" && args[0] != "-h" &&
                       args[0] != "--help" && args[0] != "--version"))
    args.insert(args.begin(), "score");

  CLI::App app{"kbreward: rewards for candidate CUDA kernels (score) and run reports (report).",
               "kbreward"};
  app.footer(kFooter);
  app.set_version_flag("--version", KB_VERSION);
  app.require_subcommand(1);

  CLI::App* score_cmd = app.add_subcommand(
      "score", "Score each candidate; writes one JSON line per candidate (the default subcommand)");
  std::vector<std::string> score_inputs, check_files, prof_files;
  std::string score_out;
  bool score_strict = false;
  SchemeFlags score_flags;
  score_cmd->add_option("inputs", score_inputs, "Reports or combined records: files, directories, - for stdin");
  score_cmd->add_option("--check", check_files, "A kbcheck report (repeatable)")->check(CLI::ExistingPath);
  score_cmd->add_option("--prof", prof_files, "A kbprof report (repeatable)")->check(CLI::ExistingPath);
  score_cmd->add_option("-o,--out", score_out, "Write the JSONL here instead of stdout");
  score_cmd->add_flag("--strict", score_strict, "Exit 1 when the input drew any warning");
  addSchemeOptions(score_cmd, score_flags);

  CLI::App* report_cmd = app.add_subcommand(
      "report", "Aggregate a run: the paper's table and fast_p, per level/source and overall");
  std::vector<std::string> report_inputs, compare_paths;
  std::string report_out, format, title;
  bool report_strict = false;
  ReportOptions ropts;
  std::string primary = "compile";
  SchemeFlags report_flags;
  report_cmd->add_option("inputs", report_inputs, "Reports or combined records: files, directories, - for stdin");
  report_cmd->add_option("--compare", compare_paths, "Two runs A B side by side, per task")->expected(2);
  report_cmd->add_option("--format", format, "text (default), json, markdown, html; -o's extension otherwise")
      ->check(CLI::IsMember({"text", "json", "markdown", "html"}));
  report_cmd->add_option("-o,--out", report_out, "Write the report here instead of stdout");
  report_cmd->add_option("--title", ropts.title, "Title of the report")->capture_default_str();
  report_cmd->add_option("--rate-margin", ropts.rate_margin,
                         "Faster-than rates count b() at this margin (0: strictly faster)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  report_cmd->add_option("--fast-p", ropts.fast_p, "fast_p thresholds, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  report_cmd->add_option("--baseline", primary, "Baseline of the per-task bars and of --compare")
      ->check(CLI::IsMember({"eager", "compile"}))
      ->capture_default_str();
  report_cmd->add_flag("--strict", report_strict, "Exit 1 when the input drew any warning");
  addSchemeOptions(report_cmd, report_flags);

  std::vector<char*> argv2{argv[0]};
  for (std::string& a : args) argv2.push_back(a.data());
  if (auto rc = kb::tools::parseOrExit(app, static_cast<int>(argv2.size()), argv2.data(), "kbreward")) return *rc;

  if (*score_cmd) {
    checkWritable(score_out);
    Scheme scheme = score_flags.build();
    RawInput raw;
    if (score_inputs.empty() && (!check_files.empty() || !prof_files.empty())) {
      // --check/--prof alone: no stdin.
    } else {
      raw = readInputs(score_inputs);
    }
    for (const std::string& f : check_files) addTyped(raw, f, "kbcheck", "--check");
    for (const std::string& f : prof_files) addTyped(raw, f, "kbprof", "--prof");
    Input in = assemble(std::move(raw));
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
    writeOutput(score_out, out);
    printWarnings(warn.list());
    if (scored == 0) {
      std::cerr << "kbreward: no candidate could be scored (" << in.candidates.size() << " excluded)\n";
      return 1;
    }
    return score_strict && !warn.list().empty() ? 1 : 0;
  }

  // report
  ropts.scheme = report_flags.build();
  ropts.primary = *parseBaselineName(primary);
  if (format.empty()) format = formatFromPath(report_out);
  checkWritable(report_out);
  if (!compare_paths.empty()) {
    if (report_cmd->count("--title") == 0) ropts.title = "kbreward comparison";
    if (!report_inputs.empty())
      throw kb::UsageError("--compare takes its two runs itself; drop the other inputs");
    RunReport a = aggregate(assemble(readInputs({compare_paths[0]})), ropts);
    RunReport b = aggregate(assemble(readInputs({compare_paths[1]})), ropts);
    for (auto* r : {&a, &b}) {
      std::vector<Warning> ws = r->warnings;
      for (Warning& w : ws) w.what += r == &a ? " (in A)" : " (in B)";
      printWarnings(ws);
    }
    bool warned = !a.warnings.empty() || !b.warnings.empty();
    Comparison c = compare(std::move(a), std::move(b));
    if (format == "json")
      writeOutput(report_out, jsonText(comparisonToJson(c), report_out));
    else if (format == "markdown")
      writeOutput(report_out, renderMarkdown(c));
    else if (format == "html")
      writeOutput(report_out, renderHtml(c));
    else
      writeOutput(report_out, renderText(c));
    return report_strict && warned ? 1 : 0;
  }

  RunReport r = aggregate(assemble(readInputs(report_inputs)), ropts);
  printWarnings(r.warnings);
  if (format == "json")
    writeOutput(report_out, jsonText(reportToJson(r), report_out));
  else if (format == "markdown")
    writeOutput(report_out, renderMarkdown(r));
  else if (format == "html")
    writeOutput(report_out, renderHtml(r));
  else
    writeOutput(report_out, renderText(r));
  if (r.all.scored == 0) {
    std::cerr << "kbreward: no task could be scored (" << r.all.results << " excluded)\n";
    return 1;
  }
  return report_strict && !r.warnings.empty() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const kb::UsageError& e) {
    std::cerr << "kbreward: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kbreward: " << e.what() << "\n";
    return 3;
  }
}
