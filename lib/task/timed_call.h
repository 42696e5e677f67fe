// What one timed call of kbprof is made of (docs/threat-model.md, "Timed
// calls"): inputs with values no other call of the run has had, made where
// the call runs from the call's own seed, and a digest of tensors (inputs
// after a call, the state).
//
// Both workers use these: the candidate's worker makes call k's inputs from
// the seed kbprof gave it just before the call and sends the outputs right
// after it; the reference worker makes the same inputs from the same seed on
// the same device for every timed call and checks the outputs it was sent.
//
//   kb::task::CallInputs maker(task, device);
//   std::vector<c10::IValue> x = maker.make(seed);      // same seed, same values
//   uint64_t d = kb::task::tensorDigest(output);              // same bytes, same digest
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "task/task.h"

namespace kb::task {

class CallInputs {
 public:
  // Loads what make() needs for `task` on `device` (a scripted generator's
  // get_inputs, rewritten to make its tensors there).
  CallInputs(const Task& task, c10::Device device);

  // The inputs of the call with this seed, fresh tensors on the device, made
  // there from the seed alone (no value set of a run is ever reused, so no
  // output can be computed from an earlier call's):
  //   spec generator: every tensor drawn from its recorded distribution by a
  //     generator of the device seeded with `seed`;
  //   scripted generator: the task's own get_inputs (inputs.pt) run with
  //     every factory op's device argument set to `device` and torch's
  //     default generators seeded with `seed`, so the values are new while
  //     whatever get_inputs builds in (symmetry, triangles, signs, bounds,
  //     a softmax's row sums) is kept. If that program cannot run on the
  //     device, it runs on the CPU and its tensors are copied (slower; the
  //     values are as fresh).
  // Scalars are the ones get_inputs returns.
  std::vector<c10::IValue> make(uint64_t seed) const;

  // "spec", "scripted" (get_inputs ran on the device) or "scripted-cpu"
  // (it ran on the CPU and was copied): what make() does for this task.
  const std::string& method() const { return method_; }

 private:
  std::vector<c10::IValue> runScripted(uint64_t seed) const;

  const Task* task_;
  c10::Device device_;
  std::string method_;
  std::shared_ptr<void> generator_;  // the rewritten inputs.pt (torch::jit::Module)
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

}  // namespace kb::task
