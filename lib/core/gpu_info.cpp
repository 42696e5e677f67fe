#include "core/gpu_info.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

namespace kb {

bool hasNvidiaGpu() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec);
}

std::string nvidiaDriverVersion() {
  FILE* f = std::fopen("/proc/driver/nvidia/version", "r");
  if (!f) return "";
  char line[256] = {0};
  std::string v;
  if (std::fgets(line, sizeof line, f)) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." or
    // "... UNIX Open Kernel Module for x86_64  580.159.04 ..." (the H200
    // machine): the first word after "Kernel Module" made of digits and dots.
    std::string s = line;
    auto k = s.find("Kernel Module");
    if (k != std::string::npos) {
      std::istringstream words(s.substr(k + 13));
      for (std::string w; words >> w;) {
        if (!w.empty() && w.find_first_not_of("0123456789.") == std::string::npos && w.find('.') != std::string::npos) {
          v = w;
          break;
        }
      }
    }
  }
  std::fclose(f);
  return v;
}

}  // namespace kb
