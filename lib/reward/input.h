// Reading what kbreward scores: kbcheck and kbprof reports, or combined
// per-candidate records, from JSON files or JSONL streams. docs/kbreward.md
// ("Input") is the schema. The reader is tolerant but never silent: whatever
// it skips or doubts is counted and named in a Warning.
#pragma once

#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/report.h"

namespace kb::reward {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One timed variant (eager, compile or candidate) as kbprof reports it.
// NaN marks a field the input did not give (or gave as a non-positive number).
struct Timing {
  double median_ms = kNaN;
  double mean_ms = kNaN;
  double min_ms = kNaN;
  double ci95_low_ms = kNaN;
  double ci95_high_ms = kNaN;
  long long n = 0;  // timed calls; 0 when not given
  // Which baseline this figure is (kbprof's timings.*.baseline, docs/kbprof.md
  // "Baselines"): eager "libtorch"/"python", compile "aoti"/"python_compile";
  // "" when the input does not say.
  std::string baseline;
};

struct Timings {
  std::optional<Timing> eager;
  std::optional<Timing> compile;
  std::optional<Timing> candidate;
};

// A task on which a trivial solution (one fixed output, all zeros) passes:
// task.json's "degenerate" (docs/task-format.md).
struct DegenerateTask {
  std::string reason;
  std::vector<std::string> contracts;  // the precision contracts it is trivial under: "strict", "paper"
};

// One candidate solution of one task: its kbcheck and kbprof reports joined,
// or one combined record.
struct Candidate {
  std::string task_id;
  std::string solution_hash;     // "" when the input gave none
  std::optional<int> level;      // KernelBench level, when given
  std::string source;            // e.g. "synth", when given
  std::optional<Status> status;  // nullopt: missing or outside the closed set
  std::string input_status;      // the status text as read ("" if missing)
  Timings timings;
  std::string timing_method;     // "cuda_events", "cupti", ... ("" if not given)
  std::string gpu;
  std::string driver;
  std::string torch_version;
  // The precision contract the candidate was judged by and the class of its
  // kernels (kbprof's "precision": contract.name, candidate_class); "" when
  // the input does not say.
  std::string precision_contract;
  std::string precision_class;
  std::string origin;            // "file:line" of its first record, for messages
  // The candidate's task is degenerate (a trivial solution passes it under
  // some contracts; reward/degenerate.h); nullopt when not known to be. From
  // a record's "degenerate_task", or the task's task.json under kbreward --tasks.
  std::optional<DegenerateTask> degenerate_task;
};

// The report's group of a candidate: "level N", else its source, else "other".
std::string groupOf(const Candidate& c);

// A problem with the input that did not stop the run. Each kind is listed in
// docs/kbreward.md ("Warnings").
struct Warning {
  std::string kind;                // e.g. "unknown_status"
  std::string what;                // e.g. "candidates with an unknown status (excluded)"
  std::vector<std::string> items;  // what it is about: task ids, file:line, values
};

// "3 candidates with an unknown status (excluded): a ("passed"), b, c"; lists
// at most `max_items` items, then "and N more".
std::string formatWarning(const Warning& w, std::size_t max_items = 5);

// Accumulates warnings by kind, in the order kinds first occur.
class WarningList {
 public:
  void add(const std::string& kind, const std::string& what, std::string item);
  void append(const Warning& w);
  std::vector<Warning> take() && { return std::move(list_); }
  const std::vector<Warning>& list() const { return list_; }

 private:
  std::vector<Warning> list_;
};

// Records as parsed, before they are joined into candidates.
struct RawRecord {
  Json json;
  std::string origin;  // "file:line" ("file" for a whole-file object, "file[i]" in an array)
};

struct RawInput {
  std::vector<RawRecord> records;
  std::vector<std::string> unparsable;  // origins of lines that are not JSON
  std::vector<std::string> not_objects; // origins of JSON values that are not objects
  std::vector<std::string> sources;     // names read ("-" for stdin)
};

// Adds a JSON object, a JSON array of objects, or JSONL (one object a line)
// from `text`; `name` names it in messages.
void parseText(std::string_view text, const std::string& name, RawInput& into);

// Adds a file, or every *.json / *.jsonl file under a directory (recursively,
// in sorted order). Throws kb::UsageError when a path cannot be read.
void readPath(const std::filesystem::path& path, RawInput& into);

struct Input {
  std::vector<Candidate> candidates;  // in order of first appearance
  std::vector<Warning> warnings;
  std::size_t records = 0;            // JSON objects read, of every kind
  std::vector<std::string> sources;
};

// Joins kbcheck and kbprof reports of the same (task_id, solution_hash) and
// takes combined records as they are. Throws kb::UsageError when the input
// holds no candidate at all (an empty input is an error, not an empty report).
// With `task_roots` (kbreward --tasks), each candidate's task.json is looked
// up there for the "degenerate" flag (reward/degenerate.h).
Input assemble(RawInput raw, const std::vector<std::filesystem::path>& task_roots = {});

}  // namespace kb::reward
