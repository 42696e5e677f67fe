// Peak arithmetic throughput of the GPUs kbprof knows, for the FLOPs half
// of the plausibility floor (plausibility.h): a forward that does F
// floating-point operations cannot take less than F over the fastest
// arithmetic the task's precision contract lets it use.
//
// Dense peaks at boost clock from NVIDIA's data sheets (no 2:4 sparsity),
// in TFLOP/s. Which peak bounds a task (floorPeakTflops):
//   strict (fp32 / fp64 task)  the TF32 tensor-core peak. The fastest
//       fp32-accurate path is a 3xTF32 GEMM at about a third of it, so the
//       floor keeps ~3x slack for legitimate work (also for fp64 tasks: the
//       FP64 and emulated-FP64 paths are slower still).
//   paper, or an fp16/bf16 task  twice the FP16/BF16 tensor-core peak: any
//       math is allowed, and FP8 runs at about twice FP16 (FP8 cannot meet
//       1e-2 on a real reduction, but the floor must never reject
//       legitimate work, so it allows for it).
// An unknown GPU has no FLOPs floor (the report says so); the bytes floor,
// measured on the device, still applies.
#pragma once

#include <optional>
#include <string>

#include "core/json.h"

namespace kb::profile {

struct GpuPeak {
  std::string model;         // the table's name for it, e.g. "H100/H200 SXM"
  double fp32_tflops = 0;    // CUDA cores (FFMA)
  double tf32_tflops = 0;    // tensor cores, dense
  double fp16_tflops = 0;    // tensor cores, dense, FP16/BF16 with fp32 accumulation
};

// The table entry for a GPU, by the name CUDA reports ("NVIDIA H200",
// "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S", ...) and,
// where the name is not decisive, its architecture ("sm_90"). nullopt for a
// GPU the table does not know.
std::optional<GpuPeak> gpuPeak(const std::string& gpu_name, const std::string& arch);

// The peak that bounds a task's time under its contract ("strict" or
// "paper") and floating dtype (precision.h: "float32", "float16", ...; ""
// for none), as described above.
double floorPeakTflops(const GpuPeak& peak, const std::string& contract, const std::string& task_float_dtype);

// What kbprof reports about the FLOPs floor: {"gpu_model", "peak_tflops",
// "basis"} or, for an unknown GPU, {"gpu_model": null, "peak_tflops": 0,
// "basis": "unknown GPU ...: no FLOPs floor"}.
struct FlopsPeakChoice {
  double peak_tflops = 0;  // 0: no FLOPs floor
  std::string model;       // "" when unknown
  std::string basis;       // one line: which peak and why
  Json toJson() const;
};
FlopsPeakChoice chooseFlopsPeak(const std::string& gpu_name, const std::string& arch, const std::string& contract,
                                const std::string& task_float_dtype);

}  // namespace kb::profile
