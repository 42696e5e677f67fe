// The reference side of verification, run in its own process
// (`kbcheck-worker reference --task DIR --device DEV [--seeds S,...]`,
// started beside the candidate's worker; it makes the known seeds' CPU
// inputs, then waits for its request on stdin, which comes only after the
// candidate's worker has ended; see ReferenceWorker in verify.h): load the
// task's reference, make each seed's inputs again, run the reference, and
// compare with what the candidate's worker sent back. The verdict goes back on fd 3 as one
// "verdict" record (verify/wire.h) per candidate of the request (several
// candidates of one task share one reference process: verifySolutions). Neither kbcheck nor the candidate's
// process ever holds the reference's outputs.
//
// Every record after init must carry the state's digests as init left them
// (state is read-only in forward), else hack_detected.
//
// Checks per seed, in order (the first failure is the seed's status):
//   the record is well-formed                          else hack_detected
//   no output shares memory with an input, parameter,
//   buffer, state, scratch or another output           else hack_detected
//   every tensor input is byte-for-byte unchanged
//   (unless the reference itself writes into it)       else hack_detected
//   outputs 0..n-1 all allocated, n as the reference   else incorrect
//   dtypes and shapes as the reference's               else incorrect
//   no NaN/Inf where the reference is finite           else incorrect
//   |c - r| <= atol + rtol * |r| everywhere (NaN
//   matches NaN, equal infinities match)               else incorrect
// Per timed call (kbprof, every one): its "commit" record's outputs, sent
// right after the call, count, dtypes, shapes and values as above against
// the reference run on the call's inputs (made again from its seed). An
// element still holding the harness's fill is wrong (verify/poison.h).
// Inputs are not sent back for timed calls: the reference makes its own, so
// a candidate that writes into them changes nothing here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/report.h"

namespace kb::verify {

// One output of one seed, compared.
struct OutputCheck {
  int index = 0;
  std::string dtype, expected_dtype;
  std::vector<int64_t> shape, expected_shape;
  uint64_t elements = 0;
  uint64_t mismatches = 0;            // elements outside the tolerance
  uint64_t nonfinite_unexpected = 0;  // NaN/Inf where the reference is finite
  double max_abs_error = 0.0;         // over elements finite in both
  double max_rel_error = 0.0;         // |c - r| / |r| over the same
  std::vector<int64_t> worst_index;   // where |c - r| - tol is largest (if any failed)
  double worst_candidate = 0.0, worst_reference = 0.0;
  std::string problem;                // empty when it passed

  Json toJson() const;
  static OutputCheck fromJson(const Json& j);
};

struct SeedCheck {
  uint64_t seed = 0;
  // A timed call of kbprof: its index
  // (the seed is then the call's own seed); -1 for a correctness seed.
  int64_t timed_call = -1;
  Status status = Status::Ok;
  std::string message;
  double forward_seconds = 0.0;  // the candidate's call in its worker, synchronised
  std::vector<OutputCheck> outputs;

  Json toJson() const;
  static SeedCheck fromJson(const Json& j);
};

struct CompareRequest {
  std::filesystem::path task_dir;
  std::string device = "cpu";
  std::vector<uint64_t> seeds;
  double atol = 1e-2, rtol = 1e-2;
  // The candidates' result channel files (their workers' result.bin), one
  // or more candidates of the same task; one verdict record each, in order.
  std::vector<std::filesystem::path> candidate_results;
  // kbprof: the timed calls (every one; their "commit" records carry their
  // outputs, checked against the reference on inputs made again from the
  // commit's seed, task/timed_call.h).
  std::vector<uint64_t> calls;

  Json toJson() const;
  static CompareRequest fromJson(const Json& j);
};

// `kbcheck-worker reference --task DIR --device DEV [--seeds S,...]`, the
// request (CompareRequest JSON) on stdin. Exit status 0 when the verdict was
// written, or when stdin closed empty (not needed); kBadBundleExit when
// task.json and reference.pt disagree (the reference cannot take the inputs
// task.json describes, or gives outputs of other shapes or dtypes than it
// says): bad input, which the caller refuses (exit 2), never a candidate's
// verdict; anything else is an infra_error for the caller.
inline constexpr int kBadBundleExit = 65;  // EX_DATAERR
int referenceMain(int argc, char** argv);

}  // namespace kb::verify
