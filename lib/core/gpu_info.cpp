#include "core/gpu_info.h"

#include "core/error.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/process.h"

namespace kb {

bool hasNvidiaGpu() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec);
}

void requireNvidiaGpu(const std::string& what) {
  if (!hasNvidiaGpu()) throw Error(what + " asked for, but this machine has no NVIDIA GPU");
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

namespace {

// nvidia-smi `args` -i `index`, read to its end (stderr merged when asked).
ProcessResult nvidiaSmi(std::vector<std::string> args, int index, bool with_stderr) {
  const char* smi = std::getenv("KB_NVIDIA_SMI");
  args.insert(args.begin(), smi && *smi ? smi : "nvidia-smi");
  args.push_back("-i");
  args.push_back(std::to_string(index));
  return runHelper(args, 30.0, /*discard_stderr=*/!with_stderr, 64 * 1024);
}

}  // namespace

std::string gpuComputeCapability(int index) {
  ProcessResult r = nvidiaSmi({"--query-gpu=compute_cap", "--format=csv,noheader"}, index, false);
  if (!r.ok()) return "";
  std::string digits;
  for (char c : r.output)
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  return digits.empty() ? "" : "sm_" + digits;
}

std::string gpuName(int index) {
  ProcessResult r = nvidiaSmi({"--query-gpu=name", "--format=csv,noheader"}, index, false);
  if (!r.ok()) return "";
  std::string name = r.output.substr(0, r.output.find('\n'));
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  return name;
}

std::optional<long> gpuMemoryMiB(int index) {
  ProcessResult r = nvidiaSmi({"--query-gpu=memory.total", "--format=csv,noheader,nounits"}, index, false);
  if (!r.ok()) return std::nullopt;
  char* end = nullptr;
  long mib = std::strtol(r.output.c_str(), &end, 10);
  if (end == r.output.c_str() || mib <= 0) return std::nullopt;
  return mib;
}

std::optional<std::vector<long>> gpuComputePids(int index) {
  ProcessResult r = nvidiaSmi({"--query-compute-apps=pid", "--format=csv,noheader"}, index, false);
  if (!r.ok()) return std::nullopt;
  std::vector<long> pids;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    char* end = nullptr;
    long pid = std::strtol(line.c_str(), &end, 10);
    if (end != line.c_str() && pid > 0) pids.push_back(pid);
  }
  return pids;
}

std::string gpuFault(int index) {
  ProcessResult r = nvidiaSmi({"--query-gpu=pci.bus_id,remapped_rows.pending,retired_pages.pending",
                               "--format=csv,noheader"},
                              index, true);
  if (r.end != ProcessEnd::Exited) return "";  // no nvidia-smi (or it hung): nothing to go on
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  std::string last = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  int code = r.exit_code;
  if (code == 127) return "";
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
