// One output of one call compared with the reference's (the reference
// worker's check, compare.h; exposed here so that tests can drive it).
//
// The rule, element by element:
//   reference finite   the candidate is finite and |c - r| <= atol + rtol*|r|
//   reference +inf     the candidate is +inf
//   reference -inf     the candidate is -inf
//   reference NaN      the candidate is NaN
// Non-finite values are compared exactly: a tolerance atol + rtol*|r| is
// infinite where the reference is, and would let any value through.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "verify/compare.h"

namespace kb::verify {

// Fills `oc` (elements, mismatches, nonfinite_unexpected, max errors,
// worst element, problem) from `oc.index`, `oc.dtype`, `oc.expected_dtype`,
// `oc.shape` and `oc.expected_shape` as the caller set them, and returns
// whether the output passed. Compares on the reference's device, `chunk`
// elements at a time (float64 temporaries of 512 MiB each by default, so
// that an output of gigabytes is compared in the memory of a few pieces);
// the result does not depend on `chunk`.
constexpr int64_t kCompareChunkElements = int64_t{1} << 26;
bool compareOutput(const at::Tensor& cand, const at::Tensor& ref, double atol, double rtol, OutputCheck& oc,
                   int64_t chunk = kCompareChunkElements);

}  // namespace kb::verify
