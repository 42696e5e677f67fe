// Shape rules of the rule-based composer: for each rule of the catalog
// (elementwise, binary, linear, matmul, attention, conv, pool, adaptive_pool,
// channel_norm, group_norm, last_norm, upsample, pixel_shuffle, pad, glu, dim,
// reduce, flatten, transpose, loss, pairwise), which inputs an operator takes,
// how its parameters are sampled, the output shape, a cost estimate and the
// Python it becomes. Dim 0 is the batch: no rule reads its size or moves it,
// so a chain can be rescaled by changing the batch alone.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "synth/compose.h"
#include "synth/rng.h"

namespace kb::synth {

// Collects the pieces of a KernelBench program.
struct Emitter {
  std::vector<std::pair<std::string, std::string>> consts;  // module-level name = value
  std::vector<std::string> init_params;                     // Model.__init__ parameters (also consts)
  std::vector<std::string> init_lines, forward_lines;
  std::vector<std::string> forward_args;                    // forward(self, x, ...)
  std::vector<std::string> input_exprs;                     // get_inputs() items
  std::set<std::string> used;

  std::string unique(const std::string& base);
  // A size passed through get_init_inputs(): module constant + __init__ parameter.
  std::string initParam(const std::string& base, const std::string& value);
  // A forward input of `shape` (dim 0 written as batch_size when batched).
  std::string input(const std::string& base, const Shape& shape, bool batched);
};

// Samples op's parameters for an input of shape `in`; false when op cannot take it.
bool sampleStep(const SeedOp& op, const Shape& in, Rng& rng, const Profile& profile, Step& step);
// Recomputes the step's shapes and cost for input `in`, parameters fixed; false when they do not fit.
bool inferStep(Step& step, const Shape& in);
// Appends the step's Python (x is the name of the running tensor).
void emitStep(const Step& step, Emitter& em);

// A first input for op (rank chosen from op.ranks), with names of its dims.
Shape firstShape(const SeedOp& op, Rng& rng, const Profile& profile, std::vector<std::string>& dim_names);

int64_t numel(const Shape& s);
std::string shapeText(const Shape& s);
// Samples a size in [lo, hi], log-uniform, rounded to a multiple of round_to when >= it.
int64_t sampleSize(Rng& rng, int64_t lo, int64_t hi, int64_t round_to);

}  // namespace kb::synth
