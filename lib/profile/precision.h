// The arithmetic precision of a candidate's GPU work, judged against the
// task's precision contract (task/precision.h, DESIGN.md §5 "A precision
// contract per task"). Torch- and CUDA-free, like provenance.h: the worker
// records kernel names (CUPTI), this classifies them.
//
// Two sources, two uses:
//   library kernels (cuBLAS, cuBLASLt, cuDNN, and the CUTLASS kernels they
//     ship) are classified by their names, which follow the libraries'
//     conventions: sm90_xmma_gemm_f32f32_tf32f32_f32_..., nvjet_hsh_...,
//     cutlass_80_tensorop_s1688gemm_..., ampere_h16816gemm_...,
//     cutlass_80_simt_sgemm_... Under the strict contract a library kernel
//     of a class narrower than the task's floating dtype (TF32/FP16/BF16/FP8/
//     INT8 in an fp32 task) is a finding: rule "reduced-precision",
//     hack_detected, the evidence naming the kernel. The name is the
//     library's, not the candidate's to choose.
//   the candidate's own kernels have arbitrary names. They are judged by
//     accuracy only (the contract's tolerance: a 3xTF32 GEMM is
//     fp32-accurate and legitimate), and their class is reported, as
//     information, from the SASS of the built library (HMMA.1684.F32.TF32,
//     HGMMA...BF16, DMMA, IMMA, ...; sass.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/json.h"
#include "profile/provenance.h"

namespace kb::profile {

// Precision classes, narrowest first: "fp4", "fp8", "int8", "bf16",
// "fp16", "tf32", "fp32", "fp64"; "tensor" for tensor-core math whose input
// type the name or SASS does not tell; "unknown" when nothing is known.
int precisionMantissaBits(const std::string& cls);  // -1 for "tensor" / "unknown"
// The narrower of two classes ("unknown" loses to anything known).
std::string narrowerPrecision(const std::string& a, const std::string& b);

// The class a library kernel's name states (mangled or demangled), or
// "unknown". Reads the type markers of cuBLAS/cuBLASLt/cuDNN/CUTLASS names:
// explicit types (tf32, bf16, f16, e4m3, i8, ...), nvjet's type letters,
// the tensor-op instruction shapes of legacy and CUTLASS names
// (s1688gemm = TF32 on fp32 data, h16816gemm = FP16, d884gemm = FP64), and
// the full-precision ones (sgemm, simt, ffma, f32f32_f32f32, dgemm).
std::string libraryKernelPrecision(const std::string& name);

// The contract as kbprof applies it (task/precision.h resolves it).
struct PrecisionPolicy {
  std::string contract = "strict";     // "strict" or "paper"
  std::string source = "default";      // "task", "default" or "override"
  double atol = 1e-4, rtol = 1e-4;
  bool reduced_precision_allowed = false;
  std::string task_float_dtype;        // "float32", "float16", ... ("" when none)
  std::string note;                    // from the contract ("" when none)
  // From PrecisionContract::toJson() (task/precision.h), which lib/profile
  // does not link: {name, source, atol, rtol, reduced_precision_allowed,
  // task_float_dtype, note}.
  static PrecisionPolicy fromJson(const Json& contract);
};

// Whether class `cls` is narrower than the task's floating dtype
// ("float32" -> 23 mantissa bits, ...). "tensor" is narrower than fp32 and
// fp64 (no tensor core computes fp32 exactly); "unknown" never is.
bool isReducedPrecision(const std::string& cls, const std::string& task_float_dtype);

struct KernelPrecision {
  std::string name;     // demangled
  std::string origin;   // "library" (cublas / cudnn) or "own"
  std::string library;  // "cublas", "cudnn" or ""
  std::string cls;      // precision class
  std::string source;   // "name" (library), "sass" (own, from the built library), "none"
  std::string sass;     // own kernels: the tensor-core opcodes seen, e.g. "HMMA.1684.F32.TF32" ("" none)
  bool reduced = false; // narrower than the task's floating dtype
  Json toJson() const;
};

struct PrecisionReport {
  PrecisionPolicy policy;
  std::string candidate_class = "unknown";  // the narrowest known class over the candidate's kernels
  std::vector<KernelPrecision> kernels;      // each distinct kernel of the candidate's calls
  std::vector<ProvenanceFinding> findings;   // rule "reduced-precision"; empty: within the contract
  std::string sass_status;                   // "read", "none" (no library given) or why it could not be read
  bool ok() const { return findings.empty(); }
  Json toJson() const;  // docs/kbprof.md "precision"
  // One line for text reports: "precision: strict contract (default, atol
  // 0.0001, rtol 0.0001); candidate kernels: fp32 (sgemm_tiled: fp32, SASS)".
  std::string summary(std::size_t max_kernels = 3) const;
};

// Classifies every kernel of the candidate's calls (activities owned by a
// call, owner >= 0): own kernels (`own_kernels`, the library's defined
// functions) from `own_sass` (normalized kernel name -> class and opcodes,
// sass.h), library kernels from their names; framework kernels are
// provenance's business and skipped here. Under a contract that allows no
// reduced precision, each library kernel narrower than the task's floating
// dtype is a "reduced-precision" finding (at most `max_findings`).
struct SassKernel {
  std::string cls = "unknown";
  std::set<std::string> opcodes;  // tensor-core instructions, without registers
};
PrecisionReport judgePrecision(const std::vector<Activity>& activities, const std::set<std::string>& own_kernels,
                               const PrecisionPolicy& policy, const std::map<std::string, SassKernel>& own_sass,
                               const std::string& sass_status, std::size_t max_findings = 5);

}  // namespace kb::profile
