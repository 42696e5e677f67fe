// kbreward's two subcommands (docs/kbreward.md): `score` writes one JSON line
// per candidate, `report` aggregates a run (or compares two) as text, JSON,
// Markdown or HTML. Inputs are read with lib/reward/input.h; no file (or
// "-") reads stdin. Warnings go to stderr as "kbreward: warning: ...".
// The caller checks that the output is writable before calling.
#pragma once

#include <string>
#include <vector>

#include "report/aggregate.h"
#include "reward/reward.h"

namespace kb::report {

struct ScoreCommand {
  std::vector<std::string> inputs;       // files, directories, "-"; none: stdin
  std::vector<std::string> check_files;  // --check: kbcheck reports
  std::vector<std::string> prof_files;   // --prof: kbprof reports
  std::string out;                       // "" or "-": stdout, else written atomically
  bool strict = false;                   // exit 1 on any warning
  Scheme scheme;
  std::vector<std::string> tasks;        // --tasks: task roots whose task.json flags degenerate tasks
};

// Exit 0, or 1 when nothing could be scored (or a warning under strict).
// kb::UsageError for unreadable or empty input.
int runScore(const ScoreCommand& command);

struct ReportCommand {
  std::vector<std::string> inputs;
  std::vector<std::string> compare;  // two runs A B, or empty
  std::string out;                   // "" or "-": stdout
  std::string format;                // text, json, markdown, html; "": from out's extension
  bool title_given = false;          // --compare titles "kbreward comparison" unless given
  bool strict = false;
  ReportOptions options;
  std::vector<std::string> tasks;    // --tasks: task roots whose task.json flags degenerate tasks
};

// Exit 0, or 1 when no task could be scored (or a warning under strict).
int runReport(const ReportCommand& command);

}  // namespace kb::report
