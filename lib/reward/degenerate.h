// Degenerate tasks get no reward. A task is degenerate under a precision
// contract when a trivial solution passes it there (its reference output
// does not depend on the input, or all zeros passes the contract's
// tolerance): `kbsynth import` flags it in task.json ("degenerate":
// {"reason", "contracts", ...}, docs/task-format.md), and a candidate
// judged under one of those contracts is excluded with reason
// "degenerate_task" (docs/kbreward.md), whatever it did: a -1 or a 3 on
// such a task says nothing about the candidate.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "reward/input.h"

namespace kb::reward {

// Score::excluded of a candidate on a degenerate task.
inline constexpr const char* kDegenerateTask = "degenerate_task";

// The flag of a task from its task.json ("degenerate"), or from a record's
// "degenerate_task" (the same object): nullopt when absent, null, or not an
// object with a string "reason". Without "contracts" it holds under both.
// Never throws; task.json's schema is lib/task's to enforce.
std::optional<DegenerateTask> parseDegenerate(const Json& field);
std::optional<DegenerateTask> degenerateOf(const Json& task_json);

// {"reason", "contracts"}: how score records carry the flag, so that
// `kbreward report` of `kbreward score`'s output excludes the same tasks.
Json degenerateToJson(const DegenerateTask& d);

// Whether a candidate judged under `contract` ("strict", "paper"; "" when
// the reports do not say) gets no reward because its task is degenerate:
// the task is trivial under that contract, or, the contract unknown, under
// any contract (no reward where a trivial solution may have passed).
bool excludedAsDegenerate(const std::optional<DegenerateTask>& task, const std::string& contract);

// Sets Candidate::degenerate_task from the bundles under `task_roots` (each
// a tasks folder: ROOT/<task_id>/task.json), for candidates that have none
// yet. With roots given, a task found under none of them, or whose
// task.json cannot be read, is named in a `task_not_found` warning (it is
// scored, unchecked).
void markDegenerateTasks(std::vector<Candidate>& candidates,
                         const std::vector<std::filesystem::path>& task_roots, WarningList& warn);

}  // namespace kb::reward
