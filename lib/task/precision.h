// The precision contract of a task (DESIGN.md §5, docs/task-format.md
// "precision"): how close a candidate's outputs must be to the reference's,
// and which arithmetic it may use to get there.
//
//   strict  KernelBench's fp32 rule: atol = rtol = 1e-4, and no
//           reduced-precision tensor-core math from libraries (a TF32, FP16,
//           BF16, FP8 or INT8 cuBLAS/cuDNN/CUTLASS kernel in an fp32 task is
//           hack_detected in kbprof). The default for tasks whose floating
//           tensors are all fp32 or fp64.
//   paper   the KernelBench paper's rule: atol = rtol = 1e-2, any math. The
//           default for tasks with an fp16 or bf16 tensor (their own
//           precision needs the looser tolerance).
//
// task.json may name the contract ("precision") and may state a tolerance;
// a stated tolerance can only tighten the contract's, never loosen it (a
// looser one is ignored and said so in `note`): bundles written before the
// contract existed carry the paper's 1e-2 as a plain default, and reading
// that as a wish for 1e-2 is exactly the hole the contract closes (a TF32
// GEMM passed 1e-2 on KernelBench level2/12 and scored 7.85x).
//
// Torch-free: kbcheck, kbprof and kbreward resolve it from task.json alone.
#pragma once

#include <optional>
#include <string>

#include "core/json.h"
#include "task/bundle.h"

namespace kb::task {

inline constexpr double kStrictTolerance = 1e-4;  // KernelBench fp32 (atol = rtol)
inline constexpr double kPaperTolerance = 1e-2;   // the KernelBench paper's

struct PrecisionContract {
  std::string name = "strict";  // "strict" or "paper"
  // Where the name came from: "task" (task.json "precision"), "default"
  // (from the task's dtypes), "override" (the caller's, e.g. a CLI flag).
  std::string source = "default";
  double atol = kStrictTolerance, rtol = kStrictTolerance;  // what outputs are compared with
  bool reduced_precision_allowed = false;                   // paper: true
  // The narrowest floating dtype among the task's tensors (inputs,
  // outputs, state): "float64", "float32", "float16", "bfloat16", or ""
  // when it has none. Library kernels are judged "reduced" against it.
  std::string task_float_dtype;
  std::string note;  // e.g. why task.json's tolerance was not used; "" when nothing to say

  Json toJson() const;  // {name, source, atol, rtol, reduced_precision_allowed, task_float_dtype, note}
};

// "strict" when every floating tensor of the task is fp32 or fp64 (or it
// has none), else "paper".
std::string defaultPrecision(const TaskInfo& info);

// The narrowest floating dtype of the task's inputs, outputs and state
// (by mantissa: bfloat16 < float16 < float32 < float64), "" when none.
std::string narrowestFloatDtype(const TaskInfo& info);

// The contract a task is judged by: `override` ("strict" or "paper") wins,
// then task.json "precision", then defaultPrecision(). The tolerance is the
// contract's, tightened (per field) by task.json "tolerance" where that is
// smaller. Throws kb::UsageError for an override that is neither name.
PrecisionContract resolveContract(const TaskInfo& info, std::optional<std::string> override = std::nullopt);

}  // namespace kb::task
