#include "core/gpu_info.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
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

std::string gpuFault(int index) {
  const char* smi = std::getenv("KB_NVIDIA_SMI");
  std::string cmd = std::string(smi && *smi ? smi : "nvidia-smi") +
                    " --query-gpu=pci.bus_id,remapped_rows.pending,retired_pages.pending --format=csv,noheader -i " +
                    std::to_string(index) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int status = ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  std::string last = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  if (status == -1 || !WIFEXITED(status)) return "";
  int code = WEXITSTATUS(status);
  if (code == 127) return "";  // no nvidia-smi: nothing to go on
  if (code != 0)
    return "nvidia-smi cannot reach GPU " + std::to_string(index) + " (exit " + std::to_string(code) + ")" +
           (last.empty() ? "" : ": " + last);
  // "0000:19:00.0, No, [N/A]": anything pending is a memory fault that needs a reset.
  std::stringstream fields(last);
  std::string bus, remap, retire;
  std::getline(fields, bus, ',');
  std::getline(fields, remap, ',');
  std::getline(fields, retire, ',');
  auto pending = [](std::string v) {
    v.erase(0, v.find_first_not_of(' '));
    return v == "Yes";
  };
  if (pending(remap)) return "GPU " + std::to_string(index) + " has an uncorrectable memory error (row remapping pending a reset)";
  if (pending(retire)) return "GPU " + std::to_string(index) + " has an uncorrectable memory error (page retirement pending a reset)";
  return "";
}

}  // namespace kb
