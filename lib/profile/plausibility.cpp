#include "profile/plausibility.h"

#include <algorithm>
#include <cstdio>

namespace kb::profile {

Plausibility checkPlausibility(const PlausibilityInput& in, double candidate_median_ms,
                               double eager_median_ms, double slack) {
  Plausibility p;
  p.slack = slack;
  p.candidate_ms = candidate_median_ms;
  p.bytes = in.input_bytes + in.output_bytes;
  p.bandwidth_gbps = in.bandwidth_gbps;
  p.flops = in.flops;
  p.peak_tflops = in.peak_tflops;
  p.flops_note = in.flops <= 0              ? "task.json states no \"flops\": no FLOPs floor"
                 : !in.peak_basis.empty()   ? in.peak_basis
                 : in.peak_tflops > 0       ? "peak given by the caller"
                                            : "no peak known for this GPU: no FLOPs floor";
  if (in.bandwidth_gbps > 0)
    p.bytes_floor_ms = static_cast<double>(in.input_bytes + in.output_bytes) / (in.bandwidth_gbps * 1e9) * 1e3;
  if (in.flops > 0 && in.peak_tflops > 0) p.flops_floor_ms = in.flops / (in.peak_tflops * 1e12) * 1e3;
  p.floor_ms = std::max(p.bytes_floor_ms, p.flops_floor_ms);
  p.ok = p.floor_ms <= 0 || candidate_median_ms >= slack * p.floor_ms;
  if (p.floor_ms > 0 && eager_median_ms > 0) p.max_speedup_vs_eager = eager_median_ms / p.floor_ms;
  return p;
}

Json Plausibility::toJson() const {
  Json j;
  j["ok"] = ok;
  j["floor_ms"] = floor_ms;
  j["bytes_floor_ms"] = bytes_floor_ms;
  j["flops_floor_ms"] = flops_floor_ms;
  j["flops"] = flops;
  j["peak_tflops"] = peak_tflops;
  j["flops_note"] = flops_note;
  j["slack"] = slack;
  j["candidate_ms"] = candidate_ms;
  j["max_speedup_vs_eager"] = max_speedup_vs_eager;
  return j;
}

std::string Plausibility::floorText() const {
  char buf[256];
  std::string out;
  if (bytes_floor_ms > 0) {
    std::snprintf(buf, sizeof buf, "%llu bytes at %.0f GB/s = %.4f ms", static_cast<unsigned long long>(bytes),
                  bandwidth_gbps, bytes_floor_ms);
    out = buf;
  }
  if (flops_floor_ms > 0) {
    std::snprintf(buf, sizeof buf, "%.4g FLOP at %.4g TFLOP/s = %.4f ms", flops, peak_tflops, flops_floor_ms);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out;
}

}  // namespace kb::profile
