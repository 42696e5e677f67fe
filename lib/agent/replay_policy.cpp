#include "agent/replay_policy.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/file.h"
#include "solution/solution.h"

namespace kb::agent {
namespace fs = std::filesystem;

namespace {

// The file's bytes; a read error names the flag ("--replay: cannot read ...").
std::string readText(const fs::path& p) {
  try {
    return readFile(p);
  } catch (const UsageError& e) {
    throw UsageError(std::string("--replay: ") + e.what());
  }
}

// One solution folder: every regular file below it, sorted by path. A link,
// a file that is not UTF-8 text (write_file's content is a JSON string) or
// a folder over a solution's limits (solution/solution.h: sizes are checked
// before anything is read) is refused.
ReplaySolution loadSolutionFolder(const fs::path& folder, const std::string& source) {
  const solution::SolutionLimits limits;
  ReplaySolution s;
  s.source = source;
  std::uintmax_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(folder)) {
    if (e.is_symlink()) throw UsageError("--replay: " + e.path().string() + " is a symbolic link");
    if (!e.is_regular_file()) continue;
    const std::uintmax_t size = e.file_size();
    if (size > limits.max_file_bytes)
      throw UsageError("--replay: " + e.path().string() + ": " + std::to_string(size) +
                       " bytes is over the limit of " + std::to_string(limits.max_file_bytes) + " for one file of a solution");
    total += size;
    if (total > limits.max_total_bytes)
      throw UsageError("--replay: " + folder.string() + ": the files exceed " + std::to_string(limits.max_total_bytes) +
                       " bytes in total");
    if (s.files.size() + 1 > limits.max_files)
      throw UsageError("--replay: " + folder.string() + " has more than " + std::to_string(limits.max_files) + " files");
    ReplayFile f{e.path().lexically_relative(folder).generic_string(), readText(e.path())};
    try {
      (void)Json(f.content).dump();  // throws on invalid UTF-8
    } catch (const Json::exception&) {
      throw UsageError("--replay: " + e.path().string() + " is not UTF-8 text");
    }
    s.files.push_back(std::move(f));
  }
  std::sort(s.files.begin(), s.files.end(), [](const ReplayFile& a, const ReplayFile& b) { return a.path < b.path; });
  return s;
}

chat::ToolCall makeCall(int step, const std::string& name, const Json& args) {
  return {"replay_" + std::to_string(step), name, args.dump(), ""};
}

// The content of the tool message answering the call of `id`, "" when none.
std::string observationOf(const std::vector<chat::Message>& messages, const std::string& id) {
  for (const chat::Message& m : messages)
    if (m.role == "tool" && m.tool_call_id == id) return m.content;
  return "";
}

// Whether verify's observation said ok on a GPU (its first line is "ok:
// outputs match the reference ... on DEVICE"): then profile is worth a call;
// on a CPU task it is not available.
bool verifiedOnGpu(const std::string& text) {
  std::string first = text.substr(0, text.find('\n'));
  return first.rfind("ok:", 0) == 0 && first.find(" on cuda") != std::string::npos;
}

}  // namespace

std::optional<std::string> replayTaskId(const std::vector<chat::Message>& messages) {
  for (const chat::Message& m : messages) {
    if (m.role != "user") continue;
    const std::string& c = m.content;
    if (c.rfind("Task: ", 0) != 0) return std::nullopt;
    std::string id = c.substr(6, c.find('\n') == std::string::npos ? std::string::npos : c.find('\n') - 6);
    if (id.empty()) return std::nullopt;
    return id;
  }
  return std::nullopt;
}

std::string replayName(const std::string& task_id) {
  size_t slash = task_id.find_last_of('/');
  return slash == std::string::npos ? task_id : task_id.substr(slash + 1);
}

ReplayPolicy::ReplayPolicy(const fs::path& dir) : dir_(fs::absolute(dir).lexically_normal()) {
  if (dir_.filename().empty()) dir_ = dir_.parent_path();
  std::error_code ec;
  if (!fs::exists(dir_, ec)) throw UsageError("--replay: no such folder: " + dir.string());
  if (!fs::is_directory(dir_, ec)) throw UsageError("--replay: " + dir.string() + " is not a folder");
  model_ = "replay:" + dir_.filename().string();
  try {
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (!e.is_directory()) continue;  // README, expected.json, ...: not solutions
      const fs::path& d = e.path();
      std::string name = d.filename().string();
      std::vector<ReplaySolution> variants;
      if (fs::is_regular_file(d / "forward.cpp")) {
        variants.push_back(loadSolutionFolder(d, name));
      } else {
        for (int k = 0; fs::is_regular_file(d / ("v" + std::to_string(k)) / "forward.cpp"); ++k)
          variants.push_back(loadSolutionFolder(d / ("v" + std::to_string(k)), name + "/v" + std::to_string(k)));
      }
      if (variants.empty())
        throw UsageError("--replay: " + d.string() + " holds neither forward.cpp nor v0/forward.cpp");
      tasks_[name] = std::move(variants);
    }
  } catch (const fs::filesystem_error& e) {
    throw UsageError("--replay: cannot read " + dir.string() + ": " + e.code().message());
  }
}

const std::vector<ReplaySolution>* ReplayPolicy::find(const std::string& task_id) const {
  auto it = tasks_.find(replayName(task_id));
  return it == tasks_.end() ? nullptr : &it->second;
}

Json ReplayPolicy::describe() const {
  return {{"kind", "replay"}, {"model", model_}, {"dir", dir_.string()}, {"tasks", tasks_.size()}};
}

chat::Completion ReplayPolicy::complete(const std::vector<chat::Message>& messages,
                                        const std::vector<chat::ToolSpec>& tools,
                                        const chat::SamplingParams& sampling) {
  std::optional<std::string> task = replayTaskId(messages);
  if (!task) throw chat::PolicyError("replay: the conversation has no task message (\"Task: ID\")", false);
  std::set<std::string> offered;
  for (const chat::ToolSpec& t : tools) offered.insert(t.name);
  const int step = static_cast<int>(std::count_if(messages.begin(), messages.end(),
                                                  [](const chat::Message& m) { return m.role == "assistant"; }));

  chat::Completion r;
  r.finish_reason = "tool_calls";
  r.model = model_;
  auto answer = [&](const std::string& text, const std::string& name, const Json& args) {
    r.content = text;
    r.tool_calls.push_back(makeCall(step, name, args));
    return r;
  };

  const std::vector<ReplaySolution>* variants = find(*task);
  if (!variants)
    return answer("replay: no solution for " + *task + " in " + dir_.string() + "; giving up", "finish",
                  {{"summary", "no replay solution for this task"}});
  const ReplaySolution& sol = (*variants)[static_cast<size_t>(std::max(0, sampling.sample)) % variants->size()];
  if (!offered.count("write_file")) throw chat::PolicyError("replay: the rollout offers no write_file tool", false);

  // The script: one write_file per file, compile, verify, [profile], finish.
  const int n = static_cast<int>(sol.files.size());
  if (step < n) {
    const ReplayFile& f = sol.files[static_cast<size_t>(step)];
    return answer("replay " + sol.source + ": writing " + f.path, "write_file",
                  {{"path", "solution/" + f.path}, {"content", f.content}});
  }
  int next = n;
  for (const char* stage : {"compile", "verify"}) {
    if (!offered.count(stage)) continue;
    if (step == next) return answer(std::string("replay ") + sol.source + ": " + stage, stage, Json::object());
    ++next;
  }
  if (step == next && offered.count("profile") && offered.count("verify") &&
      verifiedOnGpu(observationOf(messages, "replay_" + std::to_string(next - 1))))
    return answer("replay " + sol.source + ": profile", "profile", Json::object());
  return answer("replay " + sol.source + ": done", "finish", {{"summary", "replayed " + sol.source}});
}

}  // namespace kb::agent
