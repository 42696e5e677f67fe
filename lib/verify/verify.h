// `kbcheck verify`: a built solution against the task's reference.
//
// Order of events, which is what keeps the reference's output out of the
// candidate's reach (docs/threat-model.md):
//   1. the candidate runs in its own worker process (harness/worker.h) on
//      fresh inputs for each correctness seed and sends back its outputs and
//      its inputs as they were after the call;
//   2. only when that process has ended (and its process group been killed)
//      does this process load the reference, make the same inputs again and
//      run it;
//   3. then it compares, per seed: the outputs' count, dtypes and shapes;
//      that no output aliases an input, parameter, state or another output;
//      that the inputs are unchanged; no NaN/Inf where the reference has
//      none; allclose(|c - r| <= atol + rtol * |r|) with the task's
//      tolerances.
// The parent is marked non-dumpable before any worker starts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/report.h"
#include "harness/worker.h"

namespace kb {

struct VerifyOptions {
  std::string device = "cpu";           // "cpu", "cuda" or "cuda:N"
  std::vector<uint64_t> seeds;          // empty: the task's correctness seeds
  std::optional<double> atol, rtol;     // empty: the task's tolerances
  WorkerLimits limits;
  uint64_t max_scratch_bytes = 1ull << 30;
  uint64_t memory_budget_bytes = 4ull << 30;
  bool seccomp = true;
  bool landlock = true;
  bool allow_open_rdwr = false;
  std::filesystem::path worker;         // empty: findWorkerBinary()
  std::filesystem::path scratch_dir;    // empty: the system temp directory
  bool keep_worker_dir = false;
};

// One output of one seed, compared.
struct OutputCheck {
  int index = 0;
  std::string dtype, expected_dtype;
  std::vector<int64_t> shape, expected_shape;
  uint64_t elements = 0;
  uint64_t mismatches = 0;        // elements outside the tolerance
  uint64_t nonfinite_unexpected = 0;  // NaN/Inf where the reference is finite
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  std::vector<int64_t> worst_index;  // where |c - r| - tol is largest
  double worst_candidate = 0.0, worst_reference = 0.0;
  std::string problem;            // empty when it passed
};

struct SeedCheck {
  uint64_t seed = 0;
  Status status = Status::Ok;
  std::string message;
  double forward_seconds = 0.0;   // in the worker, synchronised
  std::vector<OutputCheck> outputs;
};

struct VerifyResult {
  Status status = Status::InfraError;
  std::string message;   // one line: why it is not ok
  std::string task_id;
  std::string device;
  double atol = 0.0, rtol = 0.0;
  std::vector<SeedCheck> seeds;
  WorkerRun worker;
  double seconds = 0.0;            // all of it
  double reference_seconds = 0.0;  // loading and running the reference

  Json toJson() const;  // the "verify" object of a report
};

// Verifies `library` (a built solution.so) against the task bundle at
// `task_dir`. Throws kb::UsageError for a bad task or device name; every
// outcome of the candidate is a status.
VerifyResult verifySolution(const std::filesystem::path& task_dir,
                            const std::filesystem::path& library, const VerifyOptions& options);

}  // namespace kb
