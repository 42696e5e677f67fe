// A task bundle on disk (DESIGN.md §4 "Task bundle"), read without torch:
// task.json parsed and checked, the files it names checked present and
// unchanged. docs/task-format.md documents every file and field.
//
//   <bundle>/model.py            the PyTorch reference (source of truth)
//   <bundle>/task.json           everything below is described here
//   <bundle>/reference.pt        TorchScript module, weights from init seed
//   <bundle>/inputs.pt           scripted get_inputs (only if "generator" is "scripted")
//   <bundle>/compiled/<arch>.pt2 AOTInductor package (torch.compile baseline)
//
// The torch side (loading, running, input generation) is in task/task.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::task {

// task.json "format_version" this build reads and writes.
inline constexpr int kTaskFormatVersion = 1;

// One entry of task.json "inputs": how input i of get_inputs() is made.
struct InputSpec {
  std::string kind;  // "tensor", "int", "float", "bool"
  // kind == "tensor":
  std::string dtype;           // "float32", "float16", "bfloat16", "float64",
                               // "int8", "uint8", "int16", "int32", "int64", "bool"
  std::vector<int64_t> shape;
  std::string distribution;    // "normal", "uniform", "randint", "choice", "bernoulli", "constant"
  double a = 0.0;  // normal: mean   uniform: low   randint: low   bernoulli: p   constant: value
  double b = 0.0;  // normal: std    uniform: high  randint: high (exclusive)
  std::vector<double> values;  // choice: the values drawn from, uniformly
  // kind == "int" / "float" / "bool": the value get_inputs() returned.
  double value = 0.0;
};

// One output of the reference, in flattened order (a tuple output is spread).
struct OutputSpec {
  std::string dtype;
  std::vector<int64_t> shape;
};

// One parameter or buffer of the reference, by state_dict name.
struct StateSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  bool buffer = false;  // false: nn.Parameter
};

// task.json, parsed. `json` keeps the whole document (provenance, baselines
// and anything this struct does not name).
struct TaskInfo {
  std::string id;            // e.g. "kernelbench/level1/19_ReLU"
  std::string model_sha256;  // of model.py, as captured
  std::string torch_version; // torch that captured reference.pt
  uint64_t init_seed = 42;   // torch.manual_seed before Model(*get_init_inputs())
  std::string capture;       // "script" or "trace": how reference.pt was made
  std::string generator;     // "scripted" (inputs.pt) or "spec" (inputs below)
  // "all": reference.pt's forward takes every input; "tensors": only the
  // tensor inputs (a trace with scalar inputs fixed to their recorded values).
  std::string reference_args = "all";
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<StateSpec> state;  // parameters, then buffers
  // task.json "precision" and "tolerance" as written ("" / empty when
  // absent); task/precision.h resolves them into the task's contract.
  std::string precision_declared;
  std::optional<double> tolerance_atol, tolerance_rtol;
  // The resolved contract (resolveContract(info), no override): its name
  // and tolerance, what verify and kbprof compare with unless told
  // otherwise. Never task.json's tolerance when that is looser.
  std::string precision = "strict";
  double atol = 1e-4;
  double rtol = 1e-4;
  std::vector<uint64_t> correctness_seeds;  // default 0..4
  // task.json "inputs_exhaustive" (default false): get_inputs draws every
  // input the operator is defined for (e.g. a lookup over 256 byte values),
  // so verification needs no domain draws (verificationSeeds).
  bool inputs_exhaustive = false;
  // task.json "degenerate": why a trivial solution (one fixed output, all
  // zeros) passes this task and under which precision contracts, so no
  // reward is given on it there (lib/reward/degenerate.h); "" and empty when
  // the field is null or absent (not degenerate, or a bundle captured
  // before the check).
  std::string degenerate;
  std::vector<std::string> degenerate_contracts;
  Json json;
};

struct TaskBundle {
  std::filesystem::path dir;  // absolute
  TaskInfo info;

  std::filesystem::path modelPy() const { return dir / "model.py"; }
  std::filesystem::path taskJson() const { return dir / "task.json"; }
  std::filesystem::path referencePt() const { return dir / "reference.pt"; }
  std::filesystem::path inputsPt() const { return dir / "inputs.pt"; }
  // compiled/<arch>.pt2, e.g. arch "cpu" or "sm_90".
  std::filesystem::path compiledPath(const std::string& arch) const {
    return dir / "compiled" / (arch + ".pt2");
  }
  // The architectures with a compiled package on disk (task.json "compiled").
  std::vector<std::string> compiledArchs() const;
};

// Inputs beyond the generator (docs/threat-model.md). A seed with bit 63
// set is a "domain draw": every input maker (Task::makeInputs,
// CallInputs::make) draws get_inputs' values from the seed without that bit
// (its generator seed), then moves every floating tensor into the wider
// domain of the operator, deterministically from the whole seed
// (task.h applyDomainDraw): a tensor of a few distinct values becomes
// continuous over their range, and each floating tensor is rescaled by a
// positive factor 2^u, u in [-3, 3]. Integer, bool tensors and scalars are
// untouched. A lookup table over exactly the generator's values is then
// wrong. kbprof's timed-call seeds stay below 2^63 (generator draws).
inline constexpr uint64_t kDomainSeedBit = 1ull << 63;
inline bool isDomainSeed(uint64_t seed) { return (seed & kDomainSeedBit) != 0; }
// The seed get_inputs is run with: the seed itself for a generator draw.
inline uint64_t generatorSeed(uint64_t seed) { return seed & ~kDomainSeedBit; }
// The domain draw made from generator seed `seed`'s values.
inline uint64_t domainSeed(uint64_t seed) { return seed | kDomainSeedBit; }

// How many domain draws verificationSeeds adds (fewer correctness seeds than
// this: the domain draws of the next seeds after the last one).
inline constexpr std::size_t kDomainDraws = 3;
inline constexpr std::size_t kMinDomainDraws = 2;

// The seeds verification runs: the task's correctness_seeds (generator
// draws), then, unless inputs_exhaustive, the domain draws of the first
// min(3, n) of them, at least 2 (a single seed s adds s+1's).
std::vector<uint64_t> verificationSeeds(const TaskInfo& info);

// "seed 3", or "domain draw of seed 3": how reports name a seed.
std::string seedName(uint64_t seed);
// seedName, and for a domain draw what it is: "domain draw of seed 3
// (inputs rescaled/broadened beyond get_inputs)". Failure messages use it.
std::string describeSeed(uint64_t seed);

// The bytes of one element of a task.json dtype ("float32": 4, ...); 0 for
// a dtype task.json does not know.
uint64_t dtypeBytes(const std::string& dtype);

// Parses a task.json document; throws kb::UsageError naming `where` and the
// field when a required field is missing or has the wrong type, or the
// format_version is not kTaskFormatVersion.
TaskInfo parseTaskInfo(const Json& doc, const std::string& where);

// Opens and validates a bundle: task.json parses, its version matches, and
// model.py, reference.pt (and inputs.pt for a scripted generator) exist and
// match the sha256 that task.json records for them. Throws kb::UsageError
// with the bundle path and the reason (missing file, corrupt file, version
// mismatch).
TaskBundle openBundle(const std::filesystem::path& dir);

// Checks compiled/<arch>.pt2 against task.json "compiled"."<arch>" (present,
// same sha256, same torch version). Returns the reason it is unusable, or
// std::nullopt when it is usable.
std::optional<std::string> checkCompiled(const TaskBundle& bundle, const std::string& arch);

// The device architecture name used for compiled/<arch>.pt2: "cpu" for the
// host, "sm_<major><minor>" for a CUDA device (read through the CUDA driver,
// no toolkit needed). Throws kb::Error when CUDA is absent.
std::string cudaArch(int device_index);

}  // namespace kb::task
