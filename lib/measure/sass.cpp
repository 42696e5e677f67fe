#include "measure/sass.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "kb_config.h"

namespace fs = std::filesystem;

namespace kb {
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

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
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
  std::string cmd = "timeout -k 5 " + std::to_string(timeout_seconds) + " " + quoted(tool.string()) + " -sass " +
                    quoted(library.string()) + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    scan.status = "cannot start cuobjdump";
    return scan;
  }
  // Streamed through a string buffer in chunks: SASS of a template-heavy
  // library runs to megabytes.
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0) {
    int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    scan.status = code == 124 || code == 137 ? "cuobjdump timed out" : "cuobjdump failed (exit " + std::to_string(code) + ")";
    return scan;
  }
  std::istringstream in(text);
  scan.kernels = parseSass(in);
  scan.status = "read";
  return scan;
}

}  // namespace kb
