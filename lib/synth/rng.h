// A small deterministic random number generator for the composer: the same
// seed gives the same numbers on every platform and standard library (the
// <random> distributions are not specified bit for bit, so they are not used).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace kb::synth {

// SplitMix64's finaliser: a good 64-bit mix of one value.
inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // A stream for (seed, a, b): task index and attempt, so that a task's
  // randomness does not depend on the tasks before it.
  Rng(uint64_t seed, uint64_t a, uint64_t b) : state_(mix64(mix64(seed) ^ mix64(a + 0x1234567ULL) ^ (b * 0x2545f4914f6cdd1dULL))) {}

  uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [lo, hi] (inclusive); the modulo bias is below 2^-40 for our ranges.
  int64_t range(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  // Log-uniform integer in [lo, hi].
  int64_t logRange(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    double v = std::exp(uniform(std::log(static_cast<double>(lo)), std::log(static_cast<double>(hi) + 1.0)));
    int64_t r = static_cast<int64_t>(v);
    return r < lo ? lo : (r > hi ? hi : r);
  }
  bool coin(double p = 0.5) { return uniform() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(range(0, static_cast<int64_t>(v.size()) - 1))]; }
  // Index drawn with the given non-negative weights (not all zero).
  size_t weighted(const std::vector<double>& w) {
    double total = 0;
    for (double x : w) total += x;
    double u = uniform() * total;
    for (size_t i = 0; i < w.size(); ++i) {
      if (u < w[i]) return i;
      u -= w[i];
    }
    for (size_t i = w.size(); i-- > 0;)
      if (w[i] > 0) return i;
    return 0;
  }

 private:
  uint64_t state_;
};

}  // namespace kb::synth
