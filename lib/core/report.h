// What every JSON report of every tool carries (DESIGN.md §4 "JSON outputs"):
// tool, version, task id, solution hash, GPU, driver, torch version,
// timestamps and a status from a closed set. docs/report-format.md documents
// each field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/json.h"

namespace kb {

// The closed set of outcomes. infra_error is never the solution's fault.
enum class Status {
  Ok,
  StaticViolation,
  CompileError,
  RuntimeError,
  Timeout,
  Crash,
  Incorrect,
  HackDetected,
  InfraError,
};

std::string_view statusName(Status status);
// Parses a status name; std::nullopt for anything outside the closed set.
std::optional<Status> parseStatus(std::string_view name);

// Current UTC time as ISO 8601 with milliseconds, e.g. 2026-11-29T19:13:53.120Z.
std::string nowIso8601();

struct ReportHeader {
  std::string tool;        // "kbcheck", "kbprof", ...
  std::string stage;       // "static", "build", "verify", ... ("" if none)
  std::string task_id;     // "" when the report is about no task
  std::string solution_hash;
  std::string gpu;         // "" when no GPU was involved
  std::string driver;
  std::string torch_version;
  std::string started_at;
  std::string finished_at;
  Status status = Status::Ok;
};

// The header of one report, from what every tool knows; gpu, driver and
// torch_version are set afterwards where a worker told them.
inline ReportHeader makeHeader(std::string tool, std::string stage, std::string task_id,
                               std::string solution_hash, Status status, std::string started_at,
                               std::string finished_at) {
  ReportHeader h;
  h.tool = std::move(tool);
  h.stage = std::move(stage);
  h.task_id = std::move(task_id);
  h.solution_hash = std::move(solution_hash);
  h.status = status;
  h.started_at = std::move(started_at);
  h.finished_at = std::move(finished_at);
  return h;
}

// The header fields as the first keys of a report object; empty strings
// become null.
Json headerToJson(const ReportHeader& header);

}  // namespace kb
