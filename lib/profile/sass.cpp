#include "profile/sass.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "core/process.h"
#include "kb_config.h"

namespace fs = std::filesystem;

namespace kb::profile {
namespace {

// One kernel's findings while its SASS is read.
struct Seen {
  std::string tensor = "unknown";  // narrowest tensor-core class
  std::set<std::string> opcodes;
  bool fp32 = false, fp64 = false;
};

// The class of one tensor-core opcode with its modifiers, e.g.
// "HMMA.1684.F32.TF32"; "" when it is not a tensor-core instruction.
std::string tensorClass(const std::string& op) {
  std::string base = op.substr(0, op.find('.'));
  auto has = [&](const char* m) { return op.find(m) != std::string::npos; };
  if (base == "HMMA" || base == "HGMMA") return has(".TF32") ? "tf32" : has(".BF16") ? "bf16" : "fp16";
  if (base == "IMMA" || base == "IGMMA" || base == "BMMA" || base == "UTCIMMA") return "int8";
  if (base == "QMMA" || base == "QGMMA" || base == "UTCQMMA") return "fp8";
  if (base == "OMMA" || base == "UTCOMMA") return "fp4";
  if (base == "DMMA") return "fp64";
  if (base == "UTCHMMA" || base == "UTCMMA") return "tensor";
  return "";
}

fs::path findCuobjdump() {
  if (const char* e = std::getenv("KB_CUOBJDUMP"); e && *e) return e;
  fs::path toolkit = fs::path(KB_CUDA_PATH) / "bin" / "cuobjdump";
  std::error_code ec;
  if (fs::exists(toolkit, ec)) return toolkit;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && fs::exists(fs::path(dir) / "cuobjdump", ec)) return fs::path(dir) / "cuobjdump";
  }
  return {};
}

}  // namespace

std::map<std::string, SassKernel> parseSass(std::istream& in) {
  static const std::regex function(R"(^\s*Function\s*:\s*(\S+))");
  // "/*0270*/   @!P0 HMMA.1684.F32.TF32 R12, ..." -> the opcode with modifiers.
  static const std::regex instruction(R"(^\s*/\*[0-9a-fA-F]+\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*))");
  std::map<std::string, Seen> seen;
  Seen* current = nullptr;
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("Function") != std::string::npos && std::regex_search(line, m, function)) {
      current = &seen[normalizedKernelName(m.str(1))];
      continue;
    }
    if (!current || line.find("/*") == std::string::npos || !std::regex_search(line, m, instruction)) continue;
    const std::string op = m.str(1);
    std::string cls = tensorClass(op);
    if (!cls.empty()) {
      current->tensor = narrowerPrecision(current->tensor, cls);
      current->opcodes.insert(op);
      continue;
    }
    std::string base = op.substr(0, op.find('.'));
    if (base == "FFMA" || base == "FMUL" || base == "FADD") current->fp32 = true;
    if (base == "DFMA" || base == "DMUL" || base == "DADD") current->fp64 = true;
  }
  std::map<std::string, SassKernel> out;
  for (auto& [name, s] : seen) {
    SassKernel k;
    k.opcodes = std::move(s.opcodes);
    k.cls = s.tensor != "unknown" ? s.tensor : s.fp32 ? "fp32" : s.fp64 ? "fp64" : "unknown";
    out[name] = std::move(k);
  }
  return out;
}

SassScan readLibrarySass(const fs::path& library, int timeout_seconds) {
  SassScan scan;
  fs::path tool = findCuobjdump();
  if (tool.empty()) {
    scan.status = "cuobjdump not found (set KB_CUOBJDUMP)";
    return scan;
  }
  // Read whole: SASS of a template-heavy library runs to megabytes.
  ProcessResult r = runHelper({tool.string(), "-sass", library.string()}, timeout_seconds,
                              /*discard_stderr=*/true, std::size_t(1) << 30);
  if (r.end == ProcessEnd::SpawnFailed) {
    scan.status = "cannot start cuobjdump";
    return scan;
  }
  if (r.end == ProcessEnd::TimedOut) {
    scan.status = "cuobjdump timed out";
    return scan;
  }
  if (!r.ok()) {
    int code = r.end == ProcessEnd::Exited ? r.exit_code : -1;
    scan.status = "cuobjdump failed (exit " + std::to_string(code) + ")";
    return scan;
  }
  const std::string& text = r.output;
  std::istringstream in(text);
  scan.kernels = parseSass(in);
  scan.status = "read";
  return scan;
}

}  // namespace kb::profile
