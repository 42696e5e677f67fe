// kbreward: the command line over lib/reward. It parses flags and calls
// runScore or runReport (lib/report/commands.h); all logic lives in lib/reward.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "kb_config.h"
#include "report/commands.h"
#include "reward/reward.h"

namespace {

using namespace kb::reward;
using namespace kb::report;

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

// The report's format from -o's extension (docs/kbreward.md §3): stdout and
// .txt or no extension are text, .json JSON, .md Markdown, .html HTML (any
// case). Any other extension is refused (exit 2) rather than written as text.
std::string formatOfOutput(const std::string& out) {
  if (out.empty() || out == "-") return "text";
  std::string ext = std::filesystem::path(out).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext.empty() || ext == ".txt" || ext == ".text") return "text";
  if (ext == ".json") return "json";
  if (ext == ".md" || ext == ".markdown") return "markdown";
  if (ext == ".html" || ext == ".htm") return "html";
  throw kb::UsageError("-o " + out + ": no report format is written as " + ext +
                       "; use .txt (or no extension), .json, .md or .html, or give --format");
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
  kb::tools::setVersionFlag(app, "kbreward");
  app.require_subcommand(1);

  CLI::App* score_cmd = app.add_subcommand(
      "score", "Score each candidate; writes one JSON line per candidate (the default subcommand)");
  ScoreCommand sc;
  SchemeFlags score_flags;
  score_cmd->add_option("inputs", sc.inputs, "Reports or combined records: files, directories, - for stdin");
  score_cmd->add_option("--check", sc.check_files, "A kbcheck report (repeatable)")->check(CLI::ExistingPath);
  score_cmd->add_option("--prof", sc.prof_files, "A kbprof report (repeatable)")->check(CLI::ExistingPath);
  score_cmd->add_option("-o,--out", sc.out, "Write the JSONL here instead of stdout");
  std::string score_json;
  score_cmd->add_option("--json", score_json, "The score records (JSONL) to FILE, '-' for stdout; the same as -o FILE")
      ->type_name("FILE");
  score_cmd->add_flag("--strict", sc.strict, "Exit 1 when the input drew any warning");
  score_cmd->add_option("--tasks", sc.tasks,
                        "A folder of task bundles (repeatable): a task whose task.json is flagged degenerate "
                        "gets no reward (excluded: degenerate_task)")
      ->type_name("DIR");
  addSchemeOptions(score_cmd, score_flags);

  CLI::App* report_cmd = app.add_subcommand(
      "report", "Aggregate a run: the paper's table and fast_p, per level/source and overall");
  ReportCommand rep;
  ReportOptions& ropts = rep.options;
  std::string primary = "compile";
  SchemeFlags report_flags;
  report_cmd->add_option("inputs", rep.inputs, "Reports or combined records: files, directories, - for stdin");
  report_cmd->add_option("--compare", rep.compare, "Two runs A B side by side, per task")->expected(2);
  report_cmd->add_option("--format", rep.format,
                         "text, json, markdown, html; without it, -o's extension decides (.txt or none, .json, "
                         ".md, .html) and stdout is text")
      ->check(CLI::IsMember({"text", "json", "markdown", "html"}));
  report_cmd->add_option("-o,--out", rep.out, "Write the report here instead of stdout");
  std::string report_json;
  report_cmd->add_option("--json", report_json, "The JSON report to FILE, '-' for one line on stdout (-o FILE --format json)")
      ->type_name("FILE");
  report_cmd->add_option("--tasks", rep.tasks,
                         "A folder of task bundles (repeatable): tasks flagged degenerate in task.json are excluded")
      ->type_name("DIR");
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
  report_cmd->add_flag("--strict", rep.strict, "Exit 1 when the input drew any warning");
  addSchemeOptions(report_cmd, report_flags);

  std::vector<char*> argv2{argv[0]};
  for (std::string& a : args) argv2.push_back(a.data());
  if (auto rc = kb::tools::parseOrExit(app, static_cast<int>(argv2.size()), argv2.data(), "kbreward")) return *rc;

  // -o and --json checked before any work (exit 2, not after the whole run).
  if (*score_cmd) {
    if (!score_json.empty()) {
      if (!sc.out.empty()) throw kb::UsageError("--json FILE and -o FILE both name the score records' output; give one");
      kb::tools::checkWritableFile(score_json, "--json");
      sc.out = score_json;
    }
    kb::tools::checkWritableFile(sc.out, "-o/--out");
    sc.scheme = score_flags.build();
    return runScore(sc);
  }
  ropts.scheme = report_flags.build();
  ropts.primary = *parseBaselineName(primary);
  rep.title_given = report_cmd->count("--title") > 0;
  if (!report_json.empty()) {
    if (!rep.out.empty()) throw kb::UsageError("--json FILE and -o FILE both name the report's output; give one");
    if (!rep.format.empty() && rep.format != "json")
      throw kb::UsageError("--json writes the JSON report; drop --format " + rep.format + " or use -o");
    kb::tools::checkWritableFile(report_json, "--json");
    rep.out = report_json;
    rep.format = "json";
  }
  if (rep.format.empty()) rep.format = formatOfOutput(rep.out);
  kb::tools::checkWritableFile(rep.out, "-o/--out");
  return runReport(rep);
}

}  // namespace

int main(int argc, char** argv) {
  return kb::tools::runGuarded("kbreward", [&] { return run(argc, argv); });  // UsageError 2, others 3
}
