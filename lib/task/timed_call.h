// What one timed call of kbprof is made of (docs/threat-model.md, "Timed
// calls"): inputs with values no other call of the run has had, made where
// the call runs from the call's own seed, and the digest that commits the
// call's outputs the moment it has returned.
//
// Both workers use these: the candidate's worker makes call k's inputs from
// the seed it drew just before the call and sends the digest of the outputs
// right after it; the reference worker, given a call the parent picked after
// the timed loop, makes the same inputs from the same seed on the same
// device, and checks that the outputs it is shown are the committed ones.
//
//   kb::CallInputs maker(task, device, base_seeds);
//   std::vector<c10::IValue> x = maker.make(seed);      // same seed, same values
//   uint64_t d = kb::tensorDigest(output);              // same bytes, same digest
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "task/task.h"

namespace kb {

class CallInputs {
 public:
  // `base_seeds` (at least two) are the value sets a scripted generator's
  // calls are mixed from; a spec generator draws afresh and needs none.
  // The base sets are made here (Task::makeInputs, prefetched where the
  // caller did so) and kept on `device`.
  CallInputs(const Task& task, c10::Device device, std::vector<uint64_t> base_seeds);

  // The inputs of the call with this seed, fresh tensors on the device:
  //   spec generator: every tensor drawn from its recorded distribution by a
  //     generator of the device seeded with `seed` (the exact distribution);
  //   scripted generator: floating tensors are c*A + (1-c)*B for two base
  //     sets A != B and a weight c in [0, 1), all three from `seed`; other
  //     tensors are A's. A convex mix keeps what get_inputs() builds in
  //     (symmetry, triangles, signs, bounds) while no two calls share values.
  // Scalars are the recorded ones.
  std::vector<c10::IValue> make(uint64_t seed) const;

  // "spec" or "mix" (what make() does for this task).
  const std::string& method() const { return method_; }
  const std::vector<uint64_t>& baseSeeds() const { return base_seeds_; }

 private:
  const Task* task_;
  c10::Device device_;
  std::string method_;
  std::vector<uint64_t> base_seeds_;
  std::vector<std::vector<c10::IValue>> bases_;
};

// A 64-bit digest of a tensor's bytes (its dtype and size included):
// every 32-bit word (byte, for odd sizes) mixed with its position by
// splitmix64's finaliser, the mixes summed modulo 2^64. Computed on the
// tensor's device with ATen integer ops, so a GPU output is digested where
// it lies. Not a cryptographic hash: it commits bytes the call has just
// written, before anything else of the candidate's can run unnoticed.
uint64_t tensorDigest(const at::Tensor& t);

// The digest as the records carry it: 16 lower-case hex digits.
std::string digestHex(uint64_t digest);

}  // namespace kb
