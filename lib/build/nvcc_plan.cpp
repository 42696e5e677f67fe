#include "build/nvcc_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/process.h"

namespace fs = std::filesystem;

namespace kb::build {
namespace {

std::string lookup(const std::vector<std::string>& vars, const std::string& name) {
  // The last assignment wins, as in a shell.
  for (auto it = vars.rbegin(); it != vars.rend(); ++it)
    if (it->size() > name.size() && it->compare(0, name.size(), name) == 0 && (*it)[name.size()] == '=')
      return it->substr(name.size() + 1);
  return "";
}

bool nameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// NAME=... at the start of a line (an assignment, not a command).
bool isAssignment(const std::string& line, std::string* name) {
  std::size_t i = 0;
  while (i < line.size() && nameChar(line[i])) ++i;
  if (i == 0 || i >= line.size() || line[i] != '=' || std::isdigit(static_cast<unsigned char>(line[0])))
    return false;
  *name = line.substr(0, i);
  return true;
}

// A bare program name, found on nvcc's PATH as nvcc would.
std::string resolve(const std::string& program, const std::vector<std::string>& vars) {
  return findOnPath(program, lookup(vars, "PATH")).string();
}

bool has(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

// The value after `flag` (empty: none).
std::string valueOf(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : "";
}

enum class Kind { HostPreprocess, Cudafe, DevicePreprocess, Cicc, Ptxas, Fatbinary, HostCompile, Other };

Kind kindOf(const std::vector<std::string>& argv) {
  std::string base = fs::path(argv.front()).filename().string();
  if (base == "cudafe++") return Kind::Cudafe;
  if (base == "cicc") return Kind::Cicc;
  if (base == "ptxas") return Kind::Ptxas;
  if (base == "fatbinary") return Kind::Fatbinary;
  bool device = std::any_of(argv.begin(), argv.end(),
                            [](const std::string& a) { return a.rfind("-D__CUDA_ARCH__=", 0) == 0; });
  if (has(argv, "-E")) return device ? Kind::DevicePreprocess : Kind::HostPreprocess;
  if (has(argv, "-c")) return Kind::HostCompile;
  return Kind::Other;
}

}  // namespace

std::vector<std::string> splitShellWords(const std::string& line, const std::vector<std::string>& vars) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto expand = [&](std::size_t& i) {  // line[i] == '$'
    std::size_t j = i + 1;
    bool braced = j < line.size() && line[j] == '{';
    if (braced) ++j;
    std::size_t start = j;
    while (j < line.size() && nameChar(line[j])) ++j;
    if (j == start) {  // a lone '$'
      word.push_back('$');
      return;
    }
    word += lookup(vars, line.substr(start, j - start));
    if (braced) {
      if (j >= line.size() || line[j] != '}') throw Error("unclosed ${ in: " + line);
      ++j;
    }
    i = j - 1;
  };
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::exchange(word, {}));
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '$') expand(i);
        else if (line[i] == '\\' && i + 1 < line.size() && std::string("\"\\$`").find(line[i + 1]) != std::string::npos)
          word.push_back(line[++i]);
        else word.push_back(line[i]);
      }
      if (i >= line.size()) throw Error("unclosed \" in: " + line);
    } else if (c == '\'') {
      std::size_t end = line.find('\'', i + 1);
      if (end == std::string::npos) throw Error("unclosed ' in: " + line);
      word += line.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '$') {
      expand(i);
    } else if (c == '\\' && i + 1 < line.size()) {
      word.push_back(line[++i]);
    } else {
      word.push_back(c);
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

std::optional<NvccPlan> parseNvccDryRun(const std::string& text, std::string* why) {
  auto refuse = [&](const std::string& reason) -> std::optional<NvccPlan> {
    if (why) *why = reason;
    return std::nullopt;
  };
  NvccPlan plan;
  std::vector<std::vector<std::string>> commands;
  std::vector<Kind> kinds;
  std::stringstream ss(text);
  std::string line;
  try {
    while (std::getline(ss, line)) {
      if (line.rfind("#$ ", 0) != 0) continue;
      line = line.substr(3);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
      std::string name;
      if (isAssignment(line, &name)) {
        // Values of several words (SYSTEM_INCLUDES) are only ever expanded
        // into nvcc's own command lines, which show them expanded already.
        std::vector<std::string> w = splitShellWords(line.substr(name.size() + 1), plan.env);
        std::string value;
        for (const auto& part : w) value += (value.empty() ? "" : " ") + part;
        plan.env.push_back(name + "=" + value);
        continue;
      }
      std::vector<std::string> argv = splitShellWords(line, plan.env);
      if (argv.empty()) continue;
      if (fs::path(argv.front()).filename() == "rm") continue;  // nvcc's clean-up of its temporaries
      std::string program = resolve(argv.front(), plan.env);
      if (program.empty()) return refuse("nvcc's plan runs " + argv.front() + ", which is not on its PATH");
      argv.front() = program;
      kinds.push_back(kindOf(argv));
      commands.push_back(std::move(argv));
    }
  } catch (const std::exception& e) {
    return refuse(std::string("nvcc's plan could not be read: ") + e.what());
  }
  const std::vector<Kind> expected = {Kind::HostPreprocess, Kind::Cudafe,    Kind::DevicePreprocess, Kind::Cicc,
                                      Kind::Ptxas,          Kind::Fatbinary, Kind::HostCompile};
  if (kinds != expected)
    return refuse("nvcc's plan has " + std::to_string(commands.size()) +
                  " steps, not the one-architecture shape (host front end, device chain, host compile)");
  std::vector<std::string>& cudafe = commands[1];
  std::vector<std::string>& cicc = commands[3];
  plan.host_module_id = valueOf(cudafe, "--module_id_file_name");
  if (!has(cudafe, "--gen_module_id_file") || plan.host_module_id.empty() ||
      valueOf(cicc, "--module_id_file_name") != plan.host_module_id || has(cicc, "--gen_module_id_file"))
    return refuse("nvcc's plan does not pass the module id from cudafe++ to cicc");
  // cicc writes its own copy of the module id instead of reading cudafe++'s.
  plan.device_module_id = plan.host_module_id + ".device";
  auto at = std::find(cicc.begin(), cicc.end(), "--module_id_file_name");
  *(at + 1) = plan.device_module_id;
  cicc.insert(at, "--gen_module_id_file");
  plan.host = {commands[0], commands[1]};
  plan.device = {commands[2], commands[3], commands[4], commands[5]};
  plan.after = {commands[6]};
  return plan;
}

}  // namespace kb::build
