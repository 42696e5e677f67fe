#include "synth/problems.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/file.h"
#include "core/hash.h"
#include "python/scripts.h"

namespace fs = std::filesystem;

namespace kb::synth {
namespace {

bool isLevelName(const std::string& name, int* level) {
  static const std::regex re("level([0-9]+)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return false;
  if (level) *level = std::stoi(m[1]);
  return true;
}

// KernelBench names start with their problem number: sort 2_ before 10_.
bool problemOrder(const fs::path& a, const fs::path& b) {
  auto num = [](const std::string& s) {
    size_t i = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i ? std::stol(s.substr(0, i)) : -1L;
  };
  std::string sa = a.filename().string(), sb = b.filename().string();
  long na = num(sa), nb = num(sb);
  if (na != nb) return na < nb;
  return sa < sb;
}

std::vector<fs::path> pyFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".py" && e.path().filename() != "__init__.py")
      out.push_back(e.path());
  std::sort(out.begin(), out.end(), problemOrder);
  return out;
}

// --kernelbench-version names a KernelBench problem set; for another kind of
// source it would be silently meaningless.
void requireNoVersion(const fs::path& source, const ImportOptions& options) {
  if (!options.kernelbench_version.empty())
    throw UsageError("--kernelbench-version " + options.kernelbench_version + ": " + source.string() +
                     " is not a KernelBench folder (no levelN/ folders)");
}

// The version of the KernelBench problem set whose level folders are in
// `dir`: --kernelbench-version, else the manifest's, else none (today's set).
// A flag that contradicts the manifest is a usage error: the ids would lie.
std::optional<KernelBenchVersion> versionOf(const fs::path& dir, const ImportOptions& options) {
  std::optional<KernelBenchVersion> manifest = readKernelBenchManifest(dir);
  if (options.kernelbench_version.empty()) return manifest;
  if (manifest && manifest->version != options.kernelbench_version)
    throw UsageError("--kernelbench-version " + options.kernelbench_version + ", but " +
                     (dir / kKernelBenchManifest).string() + " names version " + manifest->version);
  if (manifest) return manifest;
  return KernelBenchVersion{options.kernelbench_version, Json::object()};
}

void addLevel(const fs::path& dir, int level, const std::optional<KernelBenchVersion>& version,
              std::vector<ImportItem>& out) {
  std::string prefix = kernelBenchPrefix(version ? version->version : "");
  for (const fs::path& f : pyFiles(dir)) {
    ImportItem item;
    std::string name = f.stem().string();
    item.id = prefix + "/level" + std::to_string(level) + "/" + sanitizeIdPart(name);
    item.provenance = {{"source", "kernelbench"}, {"level", level}, {"name", name},
                       {"path", fs::absolute(f).lexically_normal().string()}};
    if (version) {
      item.provenance["version"] = version->version;
      if (version->manifest.contains("commit")) item.provenance["commit"] = version->manifest["commit"];
    }
    item.code = readFile(f);
    out.push_back(std::move(item));
  }
}

void addRow(const Json& row, size_t index, const std::string& prefix, const fs::path& file,
            std::vector<ImportItem>& out) {
  ImportItem item;
  char num[32];
  std::snprintf(num, sizeof num, "%05zu", index);
  item.id = prefix + "/" + num;
  item.provenance = {{"source", "dataset"}, {"file", fs::absolute(file).lexically_normal().string()},
                     {"row", index}};
  if (!row.is_object()) {
    item.error = "row " + std::to_string(index) + " is not a JSON object";
  } else if (!row.contains("code") || !row["code"].is_string()) {
    item.error = "row " + std::to_string(index) + " has no string column \"code\"";
  } else {
    item.code = row["code"].get<std::string>();
    for (const char* key : {"ops", "data_source"})
      if (row.contains(key)) item.provenance[key] = row[key];
    item.provenance["code_sha256"] = "sha256:" + sha256Hex(item.code);
  }
  out.push_back(std::move(item));
}

}  // namespace

std::optional<KernelBenchVersion> readKernelBenchManifest(const fs::path& dir) {
  fs::path file = dir / kKernelBenchManifest;
  if (!fs::exists(file)) return std::nullopt;
  Json m;
  try {
    m = readJsonFile(file);
  } catch (const std::exception& e) {
    throw UsageError(file.string() + ": not a readable KernelBench version manifest: " + e.what());
  }
  if (!m.is_object() || m.value("format", "") != "kb-kernelbench-version" || !m.contains("version") ||
      !m["version"].is_string())
    throw UsageError(file.string() + ": not a KernelBench version manifest (format \"kb-kernelbench-version\" "
                     "with a string \"version\"; scripts/kernelbench-extract.sh writes one)");
  std::string v = m["version"].get<std::string>();
  if (v.empty() || sanitizeIdPart(v) != v)
    throw UsageError(file.string() + ": version \"" + v + "\" is not a task id part ([A-Za-z0-9_.-])");
  return KernelBenchVersion{v, m};
}

std::string kernelBenchPrefix(const std::string& version) {
  return version.empty() ? "kernelbench" : "kernelbench-" + version;
}

std::string sanitizeIdPart(const std::string& part) {
  std::string out;
  for (char c : part)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

bool validTaskId(const std::string& id) {
  if (id.empty() || id.front() == '/' || id.back() == '/') return false;
  std::stringstream ss(id);
  std::string part;
  while (std::getline(ss, part, '/'))
    if (part.empty() || part == "." || part == ".." || sanitizeIdPart(part) != part) return false;
  return true;
}

std::vector<ImportItem> findProblems(const fs::path& source, const ImportOptions& options) {
  std::vector<ImportItem> out;
  if (!fs::exists(source)) throw UsageError(source.string() + ": no such file or folder");
  const std::string& v = options.kernelbench_version;
  if (!v.empty() && sanitizeIdPart(v) != v)
    throw UsageError("--kernelbench-version \"" + v + "\" is not a task id part ([A-Za-z0-9_.-])");
  fs::path abs = fs::absolute(source).lexically_normal();
  if (abs.filename().empty()) abs = abs.parent_path();

  if (fs::is_directory(abs)) {
    int level = 0;
    std::vector<std::pair<int, fs::path>> levels;
    for (const fs::path& root : {abs, abs / "KernelBench"}) {
      if (!fs::is_directory(root)) continue;
      for (const auto& e : fs::directory_iterator(root))
        if (e.is_directory() && isLevelName(e.path().filename().string(), &level))
          levels.emplace_back(level, e.path());
      if (!levels.empty()) break;
    }
    if (!levels.empty()) {
      std::sort(levels.begin(), levels.end());
      auto version = versionOf(levels.front().second.parent_path(), options);
      for (const auto& [n, dir] : levels) addLevel(dir, n, version, out);
    } else if (isLevelName(abs.filename().string(), &level)) {
      addLevel(abs, level, versionOf(abs.parent_path(), options), out);
    } else {
      requireNoVersion(abs, options);
      std::string prefix = options.id_prefix.empty() ? sanitizeIdPart(abs.filename().string()) : options.id_prefix;
      for (const fs::path& f : pyFiles(abs)) {
        ImportItem item;
        item.id = prefix + "/" + sanitizeIdPart(f.stem().string());
        item.provenance = {{"source", "file"}, {"path", f.string()}};
        item.code = readFile(f);
        out.push_back(std::move(item));
      }
      if (out.empty())
        throw UsageError(abs.string() + ": no levelN/ folders and no .py files (not a KernelBench folder)");
    }
    return out;
  }

  requireNoVersion(abs, options);
  std::string ext = abs.extension().string();
  std::string prefix = options.id_prefix.empty() ? sanitizeIdPart(abs.stem().string()) : options.id_prefix;
  if (ext == ".py") {
    ImportItem item;
    std::string name = abs.stem() == "model" ? abs.parent_path().filename().string() : abs.stem().string();
    item.id = options.id.empty() ? "file/" + sanitizeIdPart(name) : options.id;
    item.provenance = {{"source", "file"}, {"path", abs.string()}};
    item.code = readFile(abs);
    out.push_back(std::move(item));
  } else if (ext == ".jsonl") {
    std::ifstream in(abs);
    if (!in) throw UsageError("cannot read " + abs.string());
    std::string line;
    size_t index = 0;
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (row.is_discarded()) {
        ImportItem bad;
        char num[32];
        std::snprintf(num, sizeof num, "%05zu", index);
        bad.id = prefix + "/" + num;
        bad.provenance = {{"source", "dataset"}, {"file", abs.string()}, {"row", index}};
        bad.error = "row " + std::to_string(index) + " is not valid JSON";
        out.push_back(std::move(bad));
      } else {
        addRow(row, index, prefix, abs, out);
      }
      ++index;
    }
  } else if (ext == ".parquet") {
    python::ScriptResult r = python::runScript(python::pythonPath(options.python), "read_rows.py", {abs.string()});
    if (r.exit_code != 0)
      throw UsageError(abs.string() + ": cannot read the Parquet file (read_rows.py exit " +
                       std::to_string(r.exit_code) + ")");
    for (size_t i = 0; i < r.lines.size(); ++i) addRow(r.lines[i], i, prefix, abs, out);
  } else {
    throw UsageError(abs.string() + ": not a folder, .py, .jsonl or .parquet file");
  }
  for (const auto& item : out)
    if (!validTaskId(item.id)) throw UsageError("task id \"" + item.id + "\" is not a safe relative path");
  return out;
}

}  // namespace kb::synth
