// Task synthesis (DESIGN.md §1): the seed catalog, the op-count mix, and the
// rule-based composer that stacks 1-5 seed operators into one KernelBench
// program with shapes that fit (shape inference in ops.cpp). Torch-free: it
// writes Python source text; scripts/synth_filter.py runs it.
// docs/kbsynth-synthesis.md is the manual.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::synth {

using Shape = std::vector<int64_t>;

// One composable operator of the catalog (testdata/synth/seeds.json, made by
// scripts/fixtures/synth_seeds.py).
struct SeedOp {
  std::string name;    // "torch.nn.Conv2d", "torch.nn.functional.gelu", "transformers.models....LlamaMLP"
  std::string kind;    // "module" or "function"
  std::string source;  // "torch.nn", "torch.nn.functional", "torch", "transformers"
  std::string rule;    // shape rule (ops.cpp): elementwise, binary, linear, conv, ..., transformers
  std::vector<int> ranks;  // input ranks it takes
  bool terminal = false;   // output is a scalar or integers: only as the last op
  Json entry;              // the whole catalog entry (args, rule fields)
};

struct Catalog {
  std::filesystem::path path;
  std::string sha256;  // of the file
  std::string torch_version, transformers_version;
  std::string prelude;             // Python prelude of standalone transformers modules
  std::vector<SeedOp> ops;         // composable torch operators
  std::vector<SeedOp> transformers;  // composable standalone transformers modules
  Json counts;                     // source -> status -> count, as recorded
  std::vector<Json> entries;       // every entry (also excluded / uncurated)
};

// $KB_SYNTH_SEEDS, else dataPath("testdata/synth/seeds.json") (core/paths.h).
std::filesystem::path defaultCatalogPath();
// Reads and checks a catalog; throws kb::UsageError when it is missing or malformed.
Catalog loadCatalog(const std::filesystem::path& path);

// The op-count mix: weights of 1, 2, 3, 4, 5 fused operators and of a
// standalone transformers module.
struct Mix {
  double w[6] = {3.4, 83.8, 7.6, 2.8, 1.2, 1.2};  // the paper's (DESIGN.md §1)
  // "1:3.4,2:83.8,3:7.6,4:2.8,5:1.2,transformers:1.2" (any subset; missing keys 0;
  // "paper" is the default). Throws kb::UsageError.
  static Mix parse(const std::string& text);
  std::string str() const;
  Json json() const;  // {"1": 0.034, ..., "transformers": 0.012} (normalised)
};

// Size profile: ranges of the first sampled shapes and how big a task may get.
struct Profile {
  std::string name;
  int64_t batch_lo, batch_hi, feat_lo, feat_hi, chan_lo, chan_hi, len_lo, len_hi, hw_lo, hw_hi, dhw_lo, dhw_hi;
  int64_t seq_lo, seq_hi;      // transformers sequence length
  int64_t round_to;            // features/channels rounded to a multiple of this (>= it)
  double target_ms_lo = 0, target_ms_hi = 0;  // estimated-time target; 0: keep the sampled batch
  double flops_per_ms = 4e10, bytes_per_ms = 3e9, launch_ms = 0.004;  // cost model (H200, fp32)
  int64_t max_elements;        // per tensor
  int64_t max_total_elements;  // inputs + parameters + every intermediate
  // "gpu" (default: sized for an eager forward of about 1-100 ms on an
  // H200) or "tiny" (CPU tests). Throws kb::UsageError.
  static Profile byName(const std::string& name);
};

// Which kind of task index `index` of a run gets: 1-5 ops, or 0 for a
// standalone transformers module. A low-discrepancy sequence over the mix, so
// any prefix of a run follows the mix closely and a task's kind depends on
// (seed, index) alone.
int opCountFor(const Mix& mix, uint64_t seed, uint64_t index);

// One applied operator (ops.cpp).
struct Step {
  const SeedOp* op = nullptr;
  Json params = Json::object();  // sampled parameters (rule-specific, recorded in the manifest)
  Shape in, out;
  std::vector<Shape> extra_inputs;  // forward inputs this step adds (same batch)
  std::vector<Shape> parameters;    // learned parameters this step adds
  double flops = 0, bytes = 0;
  std::string out_dtype = "float32";
};

struct Composed {
  bool ok = false;
  std::string error;           // when !ok
  std::string code;            // model.py
  std::string category;        // "single", "fused" or "transformers"
  int op_count = 0;
  std::vector<std::string> ops;
  std::vector<Step> steps;
  std::vector<Shape> inputs;   // shapes of get_inputs() in order
  Shape output;                // predicted output shape
  std::string output_dtype = "float32";
  double est_ms = 0;           // cost-model estimate of the eager forward
  int64_t total_elements = 0;  // estimated footprint
  int attempts = 0;
  Json json() const;           // the manifest's compose fields
};

// The rule-based composer: task `index` of a run with `seed`. Deterministic:
// the same catalog, profile, mix, seed and index give the same program.
Composed composeRule(const Catalog& catalog, const Profile& profile, const Mix& mix, uint64_t seed, uint64_t index);

// The operator chain alone (used by the LLM composer to pick what to fuse):
// the same sampling as composeRule.
Composed sampleChain(const Catalog& catalog, const Profile& profile, int op_count, uint64_t seed, uint64_t index);

// Python literal of a JSON value: 0.25, True, "tanh", (1, 2).
std::string pyLiteral(const Json& v);
// "torch.nn.functional.gelu" -> "F.gelu", "torch.nn.Conv2d" -> "nn.Conv2d".
std::string pyName(const std::string& op_name);

}  // namespace kb::synth
