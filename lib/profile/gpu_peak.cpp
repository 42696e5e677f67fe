#include "profile/gpu_peak.h"

#include <algorithm>
#include <cstdio>
#include <regex>

namespace kb::profile {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Dense peaks (TFLOP/s, boost clock, no sparsity) from NVIDIA's data
// sheets; where a figure is quoted only with sparsity it is halved. Where
// variants of a name differ, the entry takes the highest (a higher peak
// only lowers the floor, never rejects legitimate work).
struct Entry {
  const char* pattern;  // regex on the lower-case CUDA device name
  GpuPeak peak;
};
const Entry kTable[] = {
    {R"(b300|gb300)", {"B300/GB300", 80, 1250, 2500}},
    {R"(b200|gb200|b100)", {"B200/GB200", 80, 1250, 2500}},
    {R"(h200|gh200)", {"H100/H200 SXM", 67, 495, 990}},
    {R"(h100.*nvl)", {"H100 NVL", 60, 418, 836}},
    {R"(h100.*pcie)", {"H100 PCIe", 51, 378, 756}},
    {R"(h100|h800)", {"H100/H200 SXM", 67, 495, 990}},
    {R"(h20($|[^0-9]))", {"H20", 44, 74, 148}},
    {R"(a100|a800)", {"A100", 19.5, 156, 312}},
    {R"(a10g|a10($|[^0-9]))", {"A10/A10G", 31.2, 62.5, 125}},
    {R"(a30($|[^0-9]))", {"A30", 10.3, 82, 165}},
    {R"(a40($|[^0-9]))", {"A40", 37.4, 74.8, 150}},
    {R"(l40s)", {"L40S", 91.6, 183, 366}},
    {R"(l40($|[^0-9s]))", {"L40", 90.5, 90.5, 181}},
    {R"((^|[^a-z0-9])l4($|[^0-9]))", {"L4", 30.3, 60, 121}},
    {R"(rtx 6000 ada)", {"RTX 6000 Ada", 91.1, 182, 364}},
    {R"(4090)", {"RTX 4090", 82.6, 82.6, 330}},
    {R"(3090)", {"RTX 3090", 35.6, 35.6, 142}},
    {R"(v100)", {"V100", 15.7, 0, 125}},
    {R"((^|[^a-z0-9])t4($|[^0-9]))", {"T4", 8.1, 0, 65}},
};

// When the name is not in the table: the highest peaks of the
// architecture's data-center and workstation parts.
const std::pair<const char*, GpuPeak> kByArch[] = {
    {"sm_100", {"sm_100 (highest of the architecture)", 80, 1250, 2500}},
    {"sm_103", {"sm_103 (highest of the architecture)", 80, 1250, 2500}},
    {"sm_90", {"sm_90 (highest of the architecture)", 67, 495, 990}},
    {"sm_89", {"sm_89 (highest of the architecture)", 91.6, 183, 366}},
    {"sm_86", {"sm_86 (highest of the architecture)", 37.4, 74.8, 150}},
    {"sm_80", {"sm_80 (highest of the architecture)", 19.5, 156, 312}},
    {"sm_75", {"sm_75 (highest of the architecture)", 16.3, 0, 130}},
    {"sm_70", {"sm_70 (highest of the architecture)", 15.7, 0, 125}},
};

bool fullPrecisionTask(const std::string& dtype) { return dtype.empty() || dtype == "float32" || dtype == "float64"; }

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::optional<GpuPeak> gpuPeak(const std::string& gpu_name, const std::string& arch) {
  const std::string n = lower(gpu_name);
  if (!n.empty())
    for (const auto& e : kTable)
      if (std::regex_search(n, std::regex(e.pattern))) return e.peak;
  for (const auto& [a, peak] : kByArch)
    if (arch == a) return peak;
  return std::nullopt;
}

double floorPeakTflops(const GpuPeak& p, const std::string& contract, const std::string& task_float_dtype) {
  if (contract == "strict" && fullPrecisionTask(task_float_dtype))
    // 3xTF32 (a third of TF32) and fp16-split emulation (a few FP16 passes)
    // are the fastest fp32-accurate paths; TF32 or half the FP16 peak is
    // above both, with room to spare.
    return std::max({p.tf32_tflops, p.fp16_tflops / 2, p.fp32_tflops});
  return 2 * std::max({p.fp16_tflops, p.tf32_tflops, p.fp32_tflops});
}

FlopsPeakChoice chooseFlopsPeak(const std::string& gpu_name, const std::string& arch, const std::string& contract,
                                const std::string& task_float_dtype) {
  FlopsPeakChoice c;
  std::optional<GpuPeak> p = gpuPeak(gpu_name, arch);
  if (!p) {
    c.basis = "unknown GPU \"" + gpu_name + "\" (" + (arch.empty() ? "architecture unknown" : arch) +
              "): no FLOPs floor, the bytes floor only";
    return c;
  }
  c.model = p->model;
  c.peak_tflops = floorPeakTflops(*p, contract, task_float_dtype);
  bool strict = contract == "strict" && fullPrecisionTask(task_float_dtype);
  c.basis = p->model + ": " + fmt(c.peak_tflops) + " TFLOP/s, " +
            (strict ? "the highest of the TF32 peak, half the FP16 peak and the FP32 peak (the strict contract; "
                      "3xTF32 runs at about a third of TF32)"
                    : "twice the FP16/BF16 tensor-core peak (" + contract + " contract, " +
                          (task_float_dtype.empty() ? std::string("no floating tensors") : task_float_dtype) +
                          ": any math, FP8 included)");
  return c;
}

Json FlopsPeakChoice::toJson() const {
  Json j;
  j["gpu_model"] = model.empty() ? Json(nullptr) : Json(model);
  j["peak_tflops"] = peak_tflops;
  j["basis"] = basis;
  return j;
}

}  // namespace kb::profile
