// The physical floor of a forward's time, and the plausibility check of a
// candidate's speed (DESIGN.md §5, §6): a call that must read its inputs and
// write its outputs cannot take less than those bytes over the device's
// memory bandwidth (measured on the device, a device-to-device copy, L2
// flushed before each timed call so the bytes come from DRAM), nor less
// than the task's FLOPs over the peak when the task states them (task.json
// "flops"; the peak from gpu_peak.h's table for the GPU and the task's
// precision contract: no FLOPs floor on a GPU the table does not know).
//
// A candidate whose median is below `slack` times the floor is flagged
// (hack_detected: the timer was fooled or work was skipped). Each timed
// sample below the floor is raised to it, so one absurd timing cannot drag
// a mean or a geomean.
#pragma once

#include <cstdint>
#include <string>

#include "core/json.h"

namespace kb::profile {

struct PlausibilityInput {
  uint64_t input_bytes = 0;    // tensor inputs
  uint64_t output_bytes = 0;   // outputs, as the reference makes them
  double bandwidth_gbps = 0;   // measured, GB/s (1e9 bytes per second); 0: unknown
  double flops = 0;            // task.json "flops", 0: not stated
  double peak_tflops = 0;      // for the task's contract and dtype (gpu_peak.h); 0: unknown
  std::string peak_basis;      // which peak and why, or why there is none (FlopsPeakChoice::basis)
};

struct Plausibility {
  double floor_ms = 0;         // max(bytes floor, FLOPs floor)
  double bytes_floor_ms = 0;
  double flops_floor_ms = 0;
  uint64_t bytes = 0;          // inputs + outputs
  double bandwidth_gbps = 0;
  double flops = 0, peak_tflops = 0;
  std::string flops_note;      // how the FLOPs floor was set, or why it is 0
  double slack = 0.8;
  bool ok = true;              // candidate median >= slack * floor
  double candidate_ms = 0;
  double max_speedup_vs_eager = 0;  // eager median / floor (0: unknown)
  Json toJson() const;
  // "N bytes at B GB/s = X ms; F FLOP at P TFLOP/s = Y ms": what the floor
  // rests on, for evidence lines.
  std::string floorText() const;
};

Plausibility checkPlausibility(const PlausibilityInput& in, double candidate_median_ms,
                               double eager_median_ms, double slack = 0.8);

}  // namespace kb::profile
