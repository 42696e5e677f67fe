// One evaluation as a client asks for it over HTTP (docs/kbserve.md
// "Evaluations"): a task of the server's store, the solution's files inline,
// the device, the stages, a reward scheme, a deadline, an idempotency key and
// a priority. Parsed and checked here before anything is queued, so that bad
// input is answered at once (400/404/413/422) and never becomes a verdict.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/json.h"
#include "eval/eval.h"
#include "solution/solution.h"

namespace kb::serve {

// A request the server refuses, with the HTTP status that says why.
class RequestError : public UsageError {
 public:
  RequestError(int http_status, const std::string& what) : UsageError(what), http_status_(http_status) {}
  int httpStatus() const { return http_status_; }

 private:
  int http_status_;
};

struct RequestLimits {
  // A solution's files: the one limit of solution/solution.h.
  size_t max_files = solution::SolutionLimits{}.max_files;
  size_t max_file_bytes = solution::SolutionLimits{}.max_file_bytes;
  size_t max_total_bytes = solution::SolutionLimits{}.max_total_bytes;
  double max_deadline_seconds = 3600;
  // A request's "stages" may leave out "static" (kbserve --allow-no-static:
  // trusted clients, tests of the run-time checks). Off, the static stage
  // runs before every build: the compilers read what the sources name
  // (`#include`, the assembler's `.incbin`) with the server's own file
  // access, and the static rules are what refuse that (a review by attack,
  // 2026-12-07, read the journal's other solutions and /etc/shadow).
  bool allow_no_static = false;
};

struct EvaluationRequest {
  std::string task;                          // a task id of the store
  std::map<std::string, std::string> files;  // relative path -> content
  std::string device = "cpu";                // "cpu" or "cuda"
  eval::Stages stages{.static_check = true, .build = true, .verify = true, .profile = false};
  std::string reward_scheme;                 // "" none, else one of reward::schemeNames()
  double deadline_seconds = 0;               // 0: the server's limit; else from submission
  std::string idempotency_key;
  int priority = 5;                          // 0 (last) .. 9 (first)

  Json toJson() const;  // the request's canonical form (journal, idempotency digest)
  // The canonical form's SHA-256: two submissions with one key must agree on it.
  std::string digest() const;
};

// Parses a request body. Throws RequestError (400 malformed, 413 over the
// size limits, 422 a value out of range); the task's existence is the
// store's to check (404).
EvaluationRequest parseEvaluationRequest(const Json& body, const RequestLimits& limits);

// A file name as loadSolution takes it: relative, '/'-separated, no empty,
// "." or ".." component, no NUL or backslash, at most 4 levels, only
// [A-Za-z0-9._-] in each component. Throws RequestError(422) naming it.
void checkFileName(const std::string& name);

// Writes the files under `dir` (created, mode 0700), refusing to follow a
// link. Throws kb::Error on an I/O fault.
void writeSolutionFiles(const std::filesystem::path& dir, const std::map<std::string, std::string>& files);

}  // namespace kb::serve
