// Finding the problems to import (kbsynth import): KernelBench checkouts and
// level folders, datasets in the CUDA-Agent-Ops-6K layout (JSONL or
// Parquet rows with a `code` column, plus `ops` and `data_source`), and
// single model.py files. Each problem gets a task id and a provenance
// record; docs/kbsynth.md lists the rules.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::synth {

struct ImportItem {
  std::string id;       // task id = bundle path under the output folder
  Json provenance;      // task.json "provenance"
  std::string code;     // the program (model.py)
  std::string error;    // non-empty: the source itself is unusable (reason "bad_row")
};

struct ImportOptions {
  std::string id;         // single .py file: its task id (default file/<name>)
  std::string id_prefix;  // datasets and plain folders: the id prefix (default: file or folder name)
  std::string python;     // interpreter for reading Parquet (see pythonPath)
  // KernelBench sources: the problem set's version (--kernelbench-version),
  // e.g. "v0". "" takes the version a kernelbench-version.json manifest
  // beside the level folders names (scripts/kernelbench-extract.sh writes
  // it), and without one the ids stay kernelbench/levelN/... (today's set).
  std::string kernelbench_version;
};

// The manifest scripts/kernelbench-extract.sh writes beside level1..3.
inline constexpr const char* kKernelBenchManifest = "kernelbench-version.json";

// The version a KernelBench source's manifest names, with its record
// (version, ref, commit, ...); nullopt without a manifest. kb::UsageError for
// a manifest that cannot be read or names no usable version.
struct KernelBenchVersion {
  std::string version;  // a task id part, e.g. "v0"
  Json manifest;        // the manifest as read ({} when the version was only named)
};
std::optional<KernelBenchVersion> readKernelBenchManifest(const std::filesystem::path& dir);

// The id prefix of a KernelBench problem set: "kernelbench" for today's
// (no version), "kernelbench-<version>" for a named one.
std::string kernelBenchPrefix(const std::string& version);

// The problems under `source`. Throws kb::UsageError when `source` is
// missing or of no known kind.
std::vector<ImportItem> findProblems(const std::filesystem::path& source, const ImportOptions& options);

// Replaces characters outside [A-Za-z0-9_.-] by '_' (a path component).
std::string sanitizeIdPart(const std::string& part);

// Whether `id` is a safe relative path: components of [A-Za-z0-9_.-], none
// empty, "." or "..".
bool validTaskId(const std::string& id);

}  // namespace kb::synth
