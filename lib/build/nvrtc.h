// NVRTC, loaded at run time (dlopen) from the CUDA toolkit, so that the tools
// run where the toolkit has no NVRTC (the build then falls back to nvcc).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kb::build {

struct NvrtcOutcome {
  bool ok = false;
  std::string log;          // NVRTC's program log
  std::size_t cubin_bytes = 0;
  double seconds = 0.0;
};

class Nvrtc {
 public:
  // The library in <cuda_home>/lib64, or nullptr when it cannot be loaded.
  // Loaded once per process; thread-safe.
  static const Nvrtc* get(const std::filesystem::path& cuda_home);

  std::string version() const { return version_; }  // e.g. "13.0"
  // Compiles `source` (named `name` in diagnostics) to a CUBIN.
  NvrtcOutcome compile(const std::string& source, const std::string& name,
                       const std::vector<std::string>& options) const;

 private:
  struct Api;
  const Api* api_ = nullptr;
  std::string version_;
};

}  // namespace kb::build
