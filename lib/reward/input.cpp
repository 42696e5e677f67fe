#include "reward/input.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "core/file.h"
#include "reward/degenerate.h"

namespace kb::reward {
namespace fs = std::filesystem;

std::string groupOf(const Candidate& c) {
  if (c.level) return "level " + std::to_string(*c.level);
  if (!c.source.empty()) return c.source;
  return "other";
}

std::string formatWarning(const Warning& w, std::size_t max_items) {
  std::string s = std::to_string(w.items.size()) + " " + w.what;
  if (w.items.empty()) return s;
  s += ": ";
  std::size_t shown = std::min(max_items, w.items.size());
  for (std::size_t i = 0; i < shown; ++i) {
    if (i) s += ", ";
    s += w.items[i];
  }
  if (shown < w.items.size()) s += ", and " + std::to_string(w.items.size() - shown) + " more";
  return s;
}

void WarningList::add(const std::string& kind, const std::string& what, std::string item) {
  for (Warning& w : list_) {
    if (w.kind == kind && w.what == what) {
      w.items.push_back(std::move(item));
      return;
    }
  }
  list_.push_back(Warning{kind, what, {std::move(item)}});
}

void WarningList::append(const Warning& w) {
  for (const std::string& item : w.items) add(w.kind, w.what, item);
}

namespace {

// One past the end of the JSON object or array that starts at text[begin]
// ('{' or '['), found by matching brackets outside strings; npos when the
// text ends first, or a string runs into a newline (JSON strings hold none:
// the value was cut there, as an interrupted JSONL line is).
std::size_t valueEnd(std::string_view text, std::size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = begin; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      else if (c == '\n')
        return std::string_view::npos;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// JSON values one after another: JSONL (one a line), concatenated documents
// (pretty-printed ones too, as `cat a.json b.json` or a loop of `--json FILE`
// dumps gives), or both. Each value is named "name:LINE" by the line it
// starts on. What is not JSON is named by its line and skipped up to the
// next line, so one bad line does not hide the records after it.
void parseStream(std::string_view text, const std::string& name, RawInput& into) {
  std::size_t pos = 0, line_no = 1, line_pos = 0;  // line_no: the line holding line_pos
  auto lineOf = [&](std::size_t at) {
    for (; line_pos < at; ++line_pos)
      if (text[line_pos] == '\n') ++line_no;
    return line_no;
  };
  while (true) {
    pos = text.find_first_not_of(" \t\r\n", pos);
    if (pos == std::string_view::npos) return;
    std::string origin = name + ":" + std::to_string(lineOf(pos));
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::size_t end = text[pos] == '{' || text[pos] == '[' ? valueEnd(text, pos) : eol;
    Json j = end == std::string_view::npos
                 ? Json(Json::value_t::discarded)
                 : Json::parse(text.substr(pos, end - pos), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      into.unparsable.push_back(origin);
      pos = eol;  // on to the next line
      continue;
    }
    if (j.is_object())
      into.records.push_back({std::move(j), origin});
    else
      into.not_objects.push_back(origin);
    pos = end;
  }
}

// kbrollout's trajectory records (docs/trajectory-format.md), which are not
// reports: kbrollout eval writes each rollout's outcome to results.jsonl.
bool isTrajectory(const Json& j) {
  auto it = j.find("format");
  return it != j.end() && it->is_string() && *it == "kb-trajectory";
}

bool hasTaskId(const Json& j) {
  auto it = j.find("task_id");
  return it != j.end() && it->is_string() && !it->get<std::string>().empty();
}

}  // namespace

void parseText(std::string_view text, const std::string& name, RawInput& into) {
  into.sources.push_back(name);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return;

  // A whole-text JSON value first (a pretty-printed report, or an array);
  // a stream of values (JSONL, concatenated documents) when it is not one.
  Json whole = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (whole.is_discarded()) {
    parseStream(text, name, into);
    return;
  }
  if (whole.is_array()) {
    for (std::size_t i = 0; i < whole.size(); ++i) {
      std::string origin = name + "[" + std::to_string(i) + "]";
      if (whole[i].is_object())
        into.records.push_back({std::move(whole[i]), origin});
      else
        into.not_objects.push_back(origin);
    }
  } else if (whole.is_object()) {
    into.records.push_back({std::move(whole), name});
  } else {
    into.not_objects.push_back(name);
  }
}

void readPath(const fs::path& path, RawInput& into) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw UsageError(path.string() + ": no such file or directory");
  if (!fs::is_directory(st)) {
    parseText(readFile(path), path.string(), into);
    return;
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::string ext = it->path().extension().string();
    if (ext == ".json" || ext == ".jsonl") files.push_back(it->path());
  }
  if (ec) throw UsageError("cannot list " + path.string() + ": " + ec.message());
  if (files.empty()) throw UsageError(path.string() + ": no .json or .jsonl files in this directory");
  std::sort(files.begin(), files.end());
  // A directory gives its report files (docs/kbreward.md §1): kbrollout's
  // trajectories are left out (results.jsonl beside them is their report),
  // and so is a file whose records all lack a task_id (kbrollout's
  // timeline.json, kbreward's own report.json), unless it also holds what
  // is not JSON, which the warnings then name.
  std::size_t read = 0;
  std::vector<std::string> skipped;
  for (const fs::path& f : files) {
    RawInput one;
    parseText(readFile(f), f.string(), one);
    std::erase_if(one.records, [](const RawRecord& r) { return isTrajectory(r.json); });
    bool reports = std::any_of(one.records.begin(), one.records.end(),
                               [](const RawRecord& r) { return hasTaskId(r.json); });
    if (!reports && one.unparsable.empty() && one.not_objects.empty()) {
      skipped.push_back(f.filename().string());
      continue;
    }
    ++read;
    for (RawRecord& r : one.records) into.records.push_back(std::move(r));
    into.unparsable.insert(into.unparsable.end(), one.unparsable.begin(), one.unparsable.end());
    into.not_objects.insert(into.not_objects.end(), one.not_objects.begin(), one.not_objects.end());
    into.sources.insert(into.sources.end(), one.sources.begin(), one.sources.end());
  }
  if (read == 0) {
    std::string names;
    for (std::size_t i = 0; i < skipped.size() && i < 5; ++i) names += (i ? ", " : "") + skipped[i];
    if (skipped.size() > 5) names += ", and " + std::to_string(skipped.size() - 5) + " more";
    throw UsageError(path.string() + ": no report files in this directory (not reports: " + names +
                     "; name a file to read it anyway)");
  }
}

namespace {

std::string str(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it != j.end() && it->is_string()) return it->get<std::string>();
  return "";
}

// "1", 1, "L1", "level1", "level 1", "level-1" -> 1.
std::optional<int> parseLevel(const Json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) {
    long long n = v.get<long long>();
    if (n >= 0 && n < 1000) return static_cast<int>(n);
    return std::nullopt;
  }
  if (!v.is_string()) return std::nullopt;
  std::string s = v.get<std::string>();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  std::size_t i = 0;
  if (s.rfind("level", 0) == 0)
    i = 5;
  else if (s.rfind("l", 0) == 0)
    i = 1;
  while (i < s.size() && (s[i] == ' ' || s[i] == '-' || s[i] == '_')) ++i;
  if (i >= s.size() || s.size() - i > 3) return std::nullopt;
  for (std::size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return std::nullopt;
  return std::stoi(s.substr(i));
}

// Reads one of eager/compile/candidate; invalid numbers are dropped and named.
std::optional<Timing> parseTiming(const Json& t, const std::string& label, WarningList& warn) {
  if (t.is_null()) return std::nullopt;
  if (!t.is_object()) {
    warn.add("invalid_timing", "timing values that are not positive numbers (ignored)", label);
    return std::nullopt;
  }
  Timing out;
  auto num = [&](const char* key, double& dst) {
    auto it = t.find(key);
    if (it == t.end() || it->is_null()) return;
    double d = it->is_number() ? it->get<double>() : kNaN;
    if (std::isfinite(d) && d > 0)
      dst = d;
    else
      warn.add("invalid_timing", "timing values that are not positive numbers (ignored)",
               label + "." + key);
  };
  num("median_ms", out.median_ms);
  num("mean_ms", out.mean_ms);
  num("min_ms", out.min_ms);
  num("ci95_low_ms", out.ci95_low_ms);
  num("ci95_high_ms", out.ci95_high_ms);
  if (auto it = t.find("n"); it != t.end() && (it->is_number_integer() || it->is_number_unsigned()))
    out.n = std::max<long long>(0, it->get<long long>());
  if (auto it = t.find("baseline"); it != t.end() && it->is_string()) out.baseline = it->get<std::string>();
  return out;
}

Timings parseTimings(const Json& record, const std::string& task, WarningList& warn) {
  Timings out;
  auto it = record.find("timings");
  if (it == record.end() || !it->is_object()) return out;
  const Json& t = *it;
  auto get = [&](const char* key) -> std::optional<Timing> {
    auto v = t.find(key);
    if (v == t.end()) return std::nullopt;
    return parseTiming(*v, task + " timings." + key, warn);
  };
  out.eager = get("eager");
  out.compile = get("compile");
  out.candidate = get("candidate");
  return out;
}

// The status of one record: the enum, or nullopt with the text kept.
struct ReadStatus {
  std::optional<Status> status;
  std::string text;
  bool present = false;
};

ReadStatus readStatus(const Json& j) {
  ReadStatus r;
  auto it = j.find("status");
  if (it == j.end() || it->is_null()) return r;
  r.present = true;
  r.text = it->is_string() ? it->get<std::string>() : it->dump();
  r.status = parseStatus(r.text);
  return r;
}

bool isFailure(const std::optional<Status>& s) {
  return s && *s != Status::Ok && *s != Status::InfraError;
}

// Several kbcheck reports of one candidate (one per stage): a failure that is
// the solution's fault wins, then doubt (unknown or missing), then an
// infrastructure error, then ok.
ReadStatus mergeChecks(const std::vector<const RawRecord*>& checks) {
  std::vector<ReadStatus> all;
  for (const RawRecord* r : checks) all.push_back(readStatus(r->json));
  for (const ReadStatus& s : all)
    if (isFailure(s.status)) return s;
  for (const ReadStatus& s : all)
    if (!s.status) return s;
  for (const ReadStatus& s : all)
    if (*s.status == Status::InfraError) return s;
  return all.front();
}

struct Slot {
  std::string task_id;
  std::string hash;
  std::string origin;
  std::vector<const RawRecord*> checks;
  const RawRecord* prof = nullptr;
  const RawRecord* combined = nullptr;
};

// Counts of one field's values, to warn when a run mixes them.
class ValueCounts {
 public:
  void add(const std::string& value) {
    if (value.empty()) return;
    for (auto& [v, n] : counts_)
      if (v == value) {
        ++n;
        return;
      }
    counts_.emplace_back(value, 1);
  }
  void warnIfMixed(const std::string& kind, const std::string& what, WarningList& warn) const {
    if (counts_.size() < 2) return;
    for (const auto& [v, n] : counts_)
      warn.add(kind, what, v + " (" + std::to_string(n) + (n == 1 ? " record)" : " records)"));
  }

 private:
  std::vector<std::pair<std::string, int>> counts_;
};

}  // namespace

Input assemble(RawInput raw, const std::vector<fs::path>& task_roots) {
  WarningList warn;
  for (const std::string& o : raw.unparsable)
    warn.add("unparsable", "lines that are not JSON (skipped)", o);
  for (const std::string& o : raw.not_objects)
    warn.add("not_object", "JSON values that are not objects (skipped)", o);

  std::vector<Slot> slots;
  std::unordered_map<std::string, std::size_t> index;
  std::map<std::string, ValueCounts> versions;  // per tool
  for (const RawRecord& r : raw.records) {
    const Json& j = r.json;
    std::string task = str(j, "task_id");
    if (task.empty()) {
      warn.add("missing_task_id", "records without a task_id (skipped)", r.origin);
      continue;
    }
    std::string tool = str(j, "tool");
    versions[tool.empty() ? "(no tool)" : tool].add(str(j, "version"));
    std::string hash = str(j, "solution_hash");
    std::string key = task + '\n' + hash;
    auto [it, inserted] = index.emplace(key, slots.size());
    if (inserted) slots.push_back(Slot{task, hash, r.origin, {}, nullptr, nullptr});
    Slot& slot = slots[it->second];
    std::string who = hash.empty() ? task : task + " (" + hash.substr(0, 12) + ")";

    if (tool == "kbcheck") {
      std::string stage = str(j, "stage");
      auto same = std::find_if(slot.checks.begin(), slot.checks.end(),
                               [&](const RawRecord* c) { return str(c->json, "stage") == stage; });
      if (same != slot.checks.end()) {
        warn.add("duplicate", "duplicate reports for one candidate (the later one kept)",
                 who + " kbcheck at " + r.origin);
        *same = &r;
      } else {
        slot.checks.push_back(&r);
      }
    } else if (tool == "kbprof") {
      if (slot.prof)
        warn.add("duplicate", "duplicate reports for one candidate (the later one kept)",
                 who + " kbprof at " + r.origin);
      slot.prof = &r;
    } else {
      if (slot.combined)
        warn.add("duplicate", "duplicate reports for one candidate (the later one kept)",
                 who + " at " + r.origin);
      slot.combined = &r;
    }
  }

  Input in;
  in.records = raw.records.size();
  in.sources = std::move(raw.sources);
  ValueCounts gpus, torches, methods;
  for (const Slot& s : slots) {
    Candidate c;
    c.task_id = s.task_id;
    c.solution_hash = s.hash;
    c.origin = s.origin;
    std::string who = s.hash.empty() ? s.task_id : s.task_id + " (" + s.hash.substr(0, 12) + ")";

    // Which records speak for this candidate; the profile first, since it ran
    // on the GPU whose name and driver matter.
    std::vector<const RawRecord*> records;
    ReadStatus st;
    const RawRecord* timed = nullptr;
    if (s.combined) {
      if (s.prof || !s.checks.empty())
        warn.add("mixed_record_kinds",
                 "candidates with both a combined record and kbcheck/kbprof reports (the combined "
                 "record used)",
                 who);
      records = {s.combined};
      st = readStatus(s.combined->json);
      timed = s.combined;
    } else {
      if (s.prof) records.push_back(s.prof);
      records.insert(records.end(), s.checks.begin(), s.checks.end());
      if (s.checks.empty()) {
        warn.add("no_check", "candidates with a kbprof report but no kbcheck report (status taken "
                             "from kbprof)",
                 who);
        st = readStatus(s.prof->json);
      } else {
        st = mergeChecks(s.checks);
        if (st.status == Status::Ok && s.prof) st = readStatus(s.prof->json);
      }
      timed = s.prof;
    }
    c.status = st.status;
    c.input_status = st.text;
    if (timed) {
      c.timings = parseTimings(timed->json, who, warn);
      c.timing_method = str(timed->json, "timing_method");
    }
    for (const RawRecord* r : records) {
      const Json& j = r->json;
      if (!c.level) {
        if (auto it = j.find("level"); it != j.end() && !it->is_null()) {
          c.level = parseLevel(*it);
          if (!c.level)
            warn.add("invalid_level", "levels that are not a number (ignored)",
                     who + " (" + it->dump() + ")");
        }
      }
      if (c.source.empty()) c.source = str(j, "source");
      if (!c.degenerate_task)
        if (auto it = j.find("degenerate_task"); it != j.end()) c.degenerate_task = parseDegenerate(*it);
      if (c.gpu.empty()) c.gpu = str(j, "gpu");
      if (c.driver.empty()) c.driver = str(j, "driver");
      if (c.torch_version.empty()) c.torch_version = str(j, "torch_version");
      if (auto it = j.find("precision"); it != j.end() && it->is_object()) {
        const Json& p = *it;
        if (c.precision_contract.empty() && p.contains("contract") && p["contract"].is_object())
          c.precision_contract = str(p["contract"], "name");
        if (c.precision_class.empty()) c.precision_class = str(p, "candidate_class");
      }
    }
    // No level field: a KernelBench id names it ("kernelbench/level2/12_...").
    if (!c.level) {
      std::stringstream parts(c.task_id);
      for (std::string part; std::getline(parts, part, '/');)
        if (part.rfind("level", 0) == 0 && part.size() > 5)
          if (auto n = parseLevel(Json(part))) c.level = n;
    }
    gpus.add(c.gpu);
    torches.add(c.torch_version);
    methods.add(c.timing_method);
    in.candidates.push_back(std::move(c));
  }

  markDegenerateTasks(in.candidates, task_roots, warn);
  for (const auto& [tool, counts] : versions)
    counts.warnIfMixed("mixed_versions", tool + " versions in one input", warn);
  gpus.warnIfMixed("mixed_gpus", "GPUs in one input", warn);
  torches.warnIfMixed("mixed_torch_versions", "torch versions in one input", warn);
  methods.warnIfMixed("mixed_timing_methods", "timing methods in one input", warn);
  in.warnings = std::move(warn).take();

  if (in.candidates.empty()) {
    std::string names;
    for (const std::string& n : in.sources) names += (names.empty() ? "" : ", ") + n;
    if (names.empty()) names = "(nothing)";
    if (in.records == 0 && raw.unparsable.empty() && raw.not_objects.empty())
      throw UsageError("empty input: no records in " + names);
    std::string why = in.warnings.empty() ? "" : ": " + formatWarning(in.warnings.front(), 3);
    throw UsageError("no usable record in " + names + why);
  }
  return in;
}

}  // namespace kb::reward
