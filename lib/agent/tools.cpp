#include "agent/tools.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fnmatch.h>
#include <fstream>
#include <memory>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <cstring>
#include <sstream>

namespace kb::agent {
namespace fs = std::filesystem;

namespace {

// Thrown by the argument readers; becomes a bad_arguments observation.
class BadArguments : public Error {
 public:
  using Error::Error;
};

class ToolFailed : public Error {
 public:
  ToolFailed(const std::string& kind, const std::string& what) : Error(what), kind_(kind) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

std::string needString(const Json& args, const char* key) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null())
    throw BadArguments(std::string("missing required argument '") + key + "'");
  if (!it->is_string()) throw BadArguments(std::string("argument '") + key + "' must be a string");
  return *it;
}

std::string optString(const Json& args, const char* key, const std::string& def) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return def;
  if (!it->is_string()) throw BadArguments(std::string("argument '") + key + "' must be a string");
  return *it;
}

double optNumber(const Json& args, const char* key, double def) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return def;
  if (!it->is_number()) throw BadArguments(std::string("argument '") + key + "' must be a number");
  return *it;
}

bool optBool(const Json& args, const char* key, bool def) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return def;
  if (!it->is_boolean()) throw BadArguments(std::string("argument '") + key + "' must be true or false");
  return *it;
}

std::string readWhole(const fs::path& p, size_t max_bytes, const std::string& shown) {
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw ToolFailed("not_found", "no such file: " + shown);
    if (errno == ELOOP) throw ToolFailed("path_refused", shown + " is a symbolic link; links are not followed");
    throw ToolFailed("io_error", "cannot open " + shown + ": " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ToolFailed("not_a_file", shown + " is not a regular file");
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw ToolFailed("too_large", shown + " has " + std::to_string(st.st_size) +
                                      " bytes, over the limit of " + std::to_string(max_bytes));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

void writeWhole(const fs::path& p, const std::string& content, const std::string& shown) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec) throw ToolFailed("io_error", "cannot create the directory of " + shown + ": " + ec.message());
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ELOOP) throw ToolFailed("path_refused", shown + " is a symbolic link; links are not followed");
    if (errno == EISDIR) throw ToolFailed("not_a_file", shown + " is a directory");
    throw ToolFailed("io_error", "cannot write " + shown + ": " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n <= 0) {
      ::close(fd);
      throw ToolFailed("io_error", "error writing " + shown);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

size_t countLines(const std::string& s) {
  if (s.empty()) return 0;
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) + (s.back() == '\n' ? 0 : 1);
}

size_t lineOf(const std::string& s, size_t offset) {
  return static_cast<size_t>(std::count(s.begin(), s.begin() + offset, '\n')) + 1;
}

// All regular files below `dir`, not following links; paths relative to `base`.
void walk(const fs::path& dir, const Workspace& ws, std::vector<std::string>& out, size_t cap) {
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (out.size() >= cap) return;
    if (it->is_symlink(ec)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) out.push_back(ws.display(it->path()));
  }
}

bool matchSegments(const std::vector<std::string>& pat, size_t pi, const std::vector<std::string>& seg,
                   size_t si) {
  if (pi == pat.size()) return si == seg.size();
  if (pat[pi] == "**") {
    for (size_t k = si; k <= seg.size(); ++k)
      if (matchSegments(pat, pi + 1, seg, k)) return true;
    return false;
  }
  if (si == seg.size()) return false;
  if (::fnmatch(pat[pi].c_str(), seg[si].c_str(), 0) != 0) return false;
  return matchSegments(pat, pi + 1, seg, si + 1);
}

std::vector<std::string> splitPath(const std::string& p) {
  std::vector<std::string> out;
  std::stringstream ss(p);
  std::string part;
  while (std::getline(ss, part, '/'))
    if (!part.empty() && part != ".") out.push_back(part);
  return out;
}

Json toolSchema(std::initializer_list<std::tuple<const char*, const char*, const char*>> props,
                std::initializer_list<const char*> required) {
  Json p = Json::object();
  for (auto& [name, type, desc] : props) p[name] = {{"type", type}, {"description", desc}};
  Json req = Json::array();
  for (const char* r : required) req.push_back(r);
  return {{"type", "object"}, {"properties", p}, {"required", req}};
}

}  // namespace

std::string capText(const std::string& text, size_t max_chars, bool* cut) {
  if (cut) *cut = false;
  if (text.size() <= max_chars) return text;
  if (cut) *cut = true;
  size_t head = max_chars * 2 / 3, tail = max_chars - head;
  std::string marker = "\n[... " + std::to_string(text.size() - head - tail) +
                       " characters left out ...]\n";
  return text.substr(0, head) + marker + text.substr(text.size() - tail);
}

bool globMatch(const std::string& pattern, const std::string& path) {
  return matchSegments(splitPath(pattern), 0, splitPath(path), 0);
}

ToolBox::ToolBox(Workspace workspace, Environment& env, ToolLimits limits)
    : ws_(std::move(workspace)), env_(env), limits_(limits) {}

std::vector<chat::ToolSpec> ToolBox::specs() const {
  std::vector<chat::ToolSpec> s;
  s.push_back({"bash",
               "Run a bash command in the workspace (the current directory). No network; "
               "time-limited; output capped. Use it for ls, cat, diff, quick scripts.",
               toolSchema({{"command", "string", "the command line"},
                           {"timeout_s", "number", "seconds before it is killed (default 120, at most 600)"}},
                          {"command"})});
  s.push_back({"read_file", "Read a text file of the workspace, with line numbers.",
               toolSchema({{"path", "string", "relative to the workspace, e.g. model.py"},
                           {"offset", "integer", "first line to show, 1-based (default 1)"},
                           {"limit", "integer", "how many lines (default 2000)"}},
                          {"path"})});
  s.push_back({"write_file", "Create or overwrite a file of the workspace (parents are created).",
               toolSchema({{"path", "string", "relative to the workspace, e.g. solution/kernels/k.cu"},
                           {"content", "string", "the whole new content"}},
                          {"path", "content"})});
  s.push_back({"edit_file",
               "Replace an exact string in a file. old_string must occur exactly once unless "
               "replace_all is true.",
               toolSchema({{"path", "string", "relative to the workspace"},
                           {"old_string", "string", "the exact text to replace"},
                           {"new_string", "string", "the replacement"},
                           {"replace_all", "boolean", "replace every occurrence (default false)"}},
                          {"path", "old_string", "new_string"})});
  s.push_back({"glob", "List workspace files whose path matches a glob (*, ?, [..], ** across directories).",
               toolSchema({{"pattern", "string", "e.g. solution/**/*.cu"}}, {"pattern"})});
  s.push_back({"grep", "Search file contents with an ECMAScript regular expression.",
               toolSchema({{"pattern", "string", "the regular expression"},
                           {"path", "string", "a file or directory to search (default: the workspace)"},
                           {"glob", "string", "only files matching this glob, e.g. **/*.cu"},
                           {"ignore_case", "boolean", "case-insensitive (default false)"}},
                          {"pattern"})});
  s.push_back({"compile",
               "Check and compile solution/ (static policy check, then the build). Returns the "
               "findings or the compiler's errors.",
               toolSchema({}, {})});
  s.push_back({"verify",
               "Run solution/ against the reference model on several random inputs and compare "
               "outputs (the task's precision contract: atol = rtol = 1e-4 for fp32 tasks, 1e-2 for "
               "fp16/bf16 ones).",
               toolSchema({}, {})});
  s.push_back({"profile",
               "Verify solution/, then time it against eager PyTorch and torch.compile on this task's "
               "input (CUDA events, L2 flushed, medians with 95% intervals) and list its kernels by "
               "time: what to optimise next.",
               toolSchema({}, {})});
  s.push_back({"finish",
               "End the episode. Your solution/ is then checked, verified and timed, and that is "
               "your result.",
               toolSchema({{"summary", "string", "one paragraph: what you built"}}, {})});
  return s;
}

Observation ToolBox::call(const chat::ToolCall& call) {
  auto start = std::chrono::steady_clock::now();
  Observation obs;
  try {
    Json args;
    std::string text = call.arguments;
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) text = "{}";
    try {
      args = Json::parse(text);
    } catch (const Json::parse_error& e) {
      throw BadArguments("arguments are not valid JSON (" + std::string(e.what()) +
                         "); send one JSON object, e.g. {\"path\": \"model.py\"}");
    }
    if (!args.is_object()) throw BadArguments("arguments must be a JSON object");
    obs = dispatch(call.name, args);
  } catch (const BadArguments& e) {
    obs = Observation{};
    obs.ok = false;
    obs.error_kind = "bad_arguments";
    obs.text = "error: bad arguments for " + call.name + ": " + e.what();
  } catch (const PathRefused& e) {
    obs = Observation{};
    obs.ok = false;
    obs.error_kind = "path_refused";
    obs.text = std::string("error: path refused: ") + e.what();
  } catch (const ToolFailed& e) {
    obs = Observation{};
    obs.ok = false;
    obs.error_kind = e.kind();
    obs.text = std::string("error: ") + e.what();
  } catch (const std::exception& e) {
    obs = Observation{};
    obs.ok = false;
    obs.error_kind = "tool_error";
    obs.text = std::string("error: the tool failed: ") + e.what();
  }
  bool cut = false;
  obs.text = capText(obs.text, limits_.max_observation_chars, &cut);
  obs.truncated = obs.truncated || cut;
  obs.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return obs;
}

Observation ToolBox::dispatch(const std::string& name, const Json& args) {
  if (name == "bash") return bash(args);
  if (name == "read_file") return readFile(args);
  if (name == "write_file") return writeFile(args);
  if (name == "edit_file") return editFile(args);
  if (name == "glob") return glob(args);
  if (name == "grep") return grep(args);
  if (name == "compile" || name == "verify" || name == "profile") return stage(name);
  if (name == "finish") return finish(args);
  std::string names;
  for (const chat::ToolSpec& s : specs()) names += (names.empty() ? "" : ", ") + s.name;
  throw ToolFailed("unknown_tool", "no tool named '" + name + "'; the tools are: " + names);
}

Observation ToolBox::bash(const Json& args) {
  std::string command = needString(args, "command");
  double timeout = optNumber(args, "timeout_s", limits_.bash_timeout_seconds);
  if (timeout <= 0) throw BadArguments("timeout_s must be positive");
  timeout = std::min(timeout, limits_.bash_max_timeout_seconds);
  ShellResult r = env_.bash(ws_.root(), command, timeout);
  Observation obs;
  obs.detail = {{"exit_code", r.exit_code}, {"signal", r.signal}, {"timed_out", r.timed_out},
                {"output_bytes", r.output_bytes}, {"sandbox", r.sandbox}};
  if (!r.started) {
    obs.ok = false;
    obs.error_kind = "sandbox_error";
    obs.text = "error: the command could not be started: " + r.message;
    return obs;
  }
  std::string text = r.output;
  if (r.output_truncated)
    text += "\n[output cut: " + std::to_string(r.output_bytes) + " bytes in all]";
  if (!text.empty() && text.back() != '\n') text += '\n';
  if (!r.over_limit.empty())
    text += "[" + r.over_limit + ": remove files (rm) to go on writing]\n";
  if (r.timed_out)
    text += "[timed out after " + std::to_string(static_cast<int>(timeout)) + " s; killed]";
  else if (r.signal)
    text += "[killed by signal " + std::to_string(r.signal) + "]";
  else
    text += "[exit code " + std::to_string(r.exit_code) + "]";
  obs.ok = !r.timed_out && r.signal == 0 && r.exit_code == 0 && r.over_limit.empty();
  if (!obs.ok) obs.error_kind = !r.over_limit.empty() ? "workspace_limit" : r.timed_out ? "timeout" : "nonzero_exit";
  if (!r.over_limit.empty()) obs.detail["workspace_limit"] = r.over_limit;
  obs.text = text;
  return obs;
}

Observation ToolBox::readFile(const Json& args) {
  std::string path = needString(args, "path");
  double offset = optNumber(args, "offset", 1), limit = optNumber(args, "limit",
                                                                   static_cast<double>(limits_.max_read_lines));
  if (offset < 1) throw BadArguments("offset is 1-based and must be >= 1");
  if (limit < 1) throw BadArguments("limit must be >= 1");
  fs::path p = ws_.resolve(path);
  std::string shown = ws_.display(p);
  std::string content = readWhole(p, limits_.max_file_bytes, shown);
  if (content.find('\0') != std::string::npos)
    throw ToolFailed("binary", shown + " is a binary file");
  size_t first = static_cast<size_t>(offset), count = std::min(static_cast<size_t>(limit), limits_.max_read_lines);
  std::istringstream in(content);
  std::string line, out;
  size_t n = 0, total = countLines(content), shownLines = 0;
  while (std::getline(in, line)) {
    ++n;
    if (n < first) continue;
    if (shownLines == count) break;
    char num[16];
    std::snprintf(num, sizeof num, "%6zu\t", n);
    out += num + line + '\n';
    ++shownLines;
  }
  if (total == 0) out = "(empty file)\n";
  else if (first > total) out = "(the file has only " + std::to_string(total) + " lines)\n";
  else if (first + shownLines - 1 < total)
    out += "[lines " + std::to_string(first) + "-" + std::to_string(first + shownLines - 1) + " of " +
           std::to_string(total) + "; use offset to read on]\n";
  Observation obs;
  obs.text = out;
  obs.detail = {{"path", shown}, {"lines", total}, {"bytes", content.size()}};
  return obs;
}

Observation ToolBox::writeFile(const Json& args) {
  std::string path = needString(args, "path");
  std::string content = needString(args, "content");
  if (content.size() > limits_.max_file_bytes)
    throw ToolFailed("too_large", "content of " + std::to_string(content.size()) +
                                      " bytes is over the limit of " + std::to_string(limits_.max_file_bytes));
  fs::path p = ws_.resolve(path);
  std::string shown = ws_.display(p);
  if (p == ws_.root()) throw ToolFailed("not_a_file", "cannot write the workspace directory itself");
  bool existed = fs::exists(fs::symlink_status(p));
  writeWhole(p, content, shown);
  Observation obs;
  obs.text = (existed ? "overwrote " : "created ") + shown + " (" + std::to_string(countLines(content)) +
             " lines, " + std::to_string(content.size()) + " bytes)";
  obs.detail = {{"path", shown}, {"bytes", content.size()}, {"created", !existed}};
  return obs;
}

Observation ToolBox::editFile(const Json& args) {
  std::string path = needString(args, "path");
  std::string old_s = needString(args, "old_string");
  std::string new_s = needString(args, "new_string");
  bool all = optBool(args, "replace_all", false);
  if (old_s.empty()) throw BadArguments("old_string is empty; use write_file to create a file");
  if (old_s == new_s) throw BadArguments("old_string and new_string are the same; nothing to do");
  fs::path p = ws_.resolve(path);
  std::string shown = ws_.display(p);
  std::string content = readWhole(p, limits_.max_file_bytes, shown);
  std::vector<size_t> at;
  for (size_t pos = content.find(old_s); pos != std::string::npos; pos = content.find(old_s, pos + old_s.size()))
    at.push_back(pos);
  if (at.empty())
    throw ToolFailed("edit_not_found", "old_string was not found in " + shown +
                                           " (it must match exactly, whitespace and indentation "
                                           "included; read_file shows the current text)");
  if (at.size() > 1 && !all) {
    std::string lines;
    for (size_t i = 0; i < at.size() && i < 10; ++i)
      lines += (i ? ", " : "") + std::to_string(lineOf(content, at[i]));
    throw ToolFailed("edit_ambiguous", "old_string occurs " + std::to_string(at.size()) + " times in " +
                                           shown + " (lines " + lines +
                                           "); include more surrounding text to make it unique, or "
                                           "set replace_all to true");
  }
  std::string out;
  size_t prev = 0;
  for (size_t pos : at) {
    out.append(content, prev, pos - prev);
    out += new_s;
    prev = pos + old_s.size();
  }
  out.append(content, prev, std::string::npos);
  if (out.size() > limits_.max_file_bytes) throw ToolFailed("too_large", "the edited file would be over the limit");
  writeWhole(p, out, shown);
  Observation obs;
  obs.text = "edited " + shown + ": " + std::to_string(at.size()) + " replacement" +
             (at.size() == 1 ? "" : "s") + " (first at line " + std::to_string(lineOf(content, at[0])) + ")";
  obs.detail = {{"path", shown}, {"replacements", at.size()}};
  return obs;
}

Observation ToolBox::glob(const Json& args) {
  std::string pattern = needString(args, "pattern");
  if (!pattern.empty() && pattern.front() == '/') throw PathRefused("absolute patterns are refused; patterns are relative to the workspace");
  for (const std::string& part : splitPath(pattern))
    if (part == "..") throw PathRefused("'..' refused in the pattern");
  std::vector<std::string> files;
  walk(ws_.root(), ws_, files, 100000);
  std::sort(files.begin(), files.end());
  std::string out;
  size_t n = 0;
  for (const std::string& f : files) {
    if (!globMatch(pattern, f)) continue;
    if (n++ < limits_.max_glob_results) out += f + '\n';
  }
  if (n == 0) out = "no files match " + pattern + '\n';
  else if (n > limits_.max_glob_results)
    out += "[" + std::to_string(n - limits_.max_glob_results) + " more not shown]\n";
  Observation obs;
  obs.text = out;
  obs.detail = {{"matches", n}};
  return obs;
}

Observation ToolBox::grep(const Json& args) {
  std::string pattern = needString(args, "pattern");
  std::string where = optString(args, "path", ".");
  std::string filter = optString(args, "glob", "");
  bool icase = optBool(args, "ignore_case", false);
  // PCRE2 with a match limit, not std::regex: a pattern the model writes
  // must not hang or overflow the stack of the process serving it (a
  // backtracking pattern like (a+)+b is exponential; kbserve runs many
  // sessions in one process).
  int err = 0;
  PCRE2_SIZE err_at = 0;
  std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> re(
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), icase ? PCRE2_CASELESS : 0, &err,
                    &err_at, nullptr),
      &pcre2_code_free);
  if (!re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw BadArguments("invalid regular expression at offset " + std::to_string(err_at) + ": " +
                       reinterpret_cast<const char*>(msg));
  }
  std::unique_ptr<pcre2_match_context, decltype(&pcre2_match_context_free)> limits(pcre2_match_context_create(nullptr),
                                                                                 &pcre2_match_context_free);
  pcre2_set_match_limit(limits.get(), 1000000);
  pcre2_set_depth_limit(limits.get(), 10000);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(re.get(), nullptr), &pcre2_match_data_free);
  size_t too_costly = 0;
  fs::path base = where == "." ? ws_.root() : ws_.resolve(where);
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(base, ec))) files.push_back(ws_.display(base));
  else if (fs::is_directory(fs::symlink_status(base, ec))) walk(base, ws_, files, 100000);
  else throw ToolFailed("not_found", "no such file or directory: " + where);
  std::sort(files.begin(), files.end());
  std::string out;
  size_t matches = 0;
  for (const std::string& f : files) {
    if (!filter.empty() && !globMatch(filter, f)) continue;
    std::string content;
    try {
      content = readWhole(ws_.root() / f, limits_.max_file_bytes, f);
    } catch (const ToolFailed&) {
      continue;  // too large or unreadable: skipped
    }
    if (content.find('\0') != std::string::npos) continue;
    std::istringstream in(content);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      std::string probe = line.size() > 4000 ? line.substr(0, 4000) : line;
      int rc = pcre2_match(re.get(), reinterpret_cast<PCRE2_SPTR>(probe.data()), probe.size(), 0, 0, md.get(),
                           limits.get());
      if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) ++too_costly;
      if (rc < 0) continue;
      if (++matches <= limits_.max_grep_matches)
        out += f + ":" + std::to_string(n) + ": " + (line.size() > 300 ? line.substr(0, 300) + "..." : line) + '\n';
    }
  }
  if (matches == 0) out = "no matches\n";
  if (too_costly)
    out += "[" + std::to_string(too_costly) + " lines not searched: the pattern backtracks too much on them]\n";
  else if (matches > limits_.max_grep_matches)
    out += "[" + std::to_string(matches - limits_.max_grep_matches) + " more matches not shown]\n";
  Observation obs;
  obs.text = out;
  obs.detail = {{"matches", matches}};
  return obs;
}

Observation ToolBox::stage(const std::string& name) {
  StageResult r = name == "compile" ? env_.compile(ws_.solutionDir())
                  : name == "verify" ? env_.verify(ws_.solutionDir())
                                     : env_.profile(ws_.solutionDir());
  Observation obs;
  obs.ok = r.available && r.status != Status::InfraError;
  if (!r.available) obs.error_kind = "not_available";
  else if (r.status == Status::InfraError) obs.error_kind = "infra_error";
  obs.text = r.text;
  obs.detail = {{"stage", r.stage.empty() ? name : r.stage},
                {"available", r.available},
                {"status", r.available ? Json(std::string(statusName(r.status))) : Json(nullptr)},
                {"seconds", r.seconds},
                {"resources", r.resources},
                {"report", r.report}};
  return obs;
}

Observation ToolBox::finish(const Json& args) {
  std::string summary = optString(args, "summary", "");
  Observation obs;
  obs.finish = true;
  obs.text = "finished; solution/ will now be checked, verified and timed";
  obs.detail = {{"summary", summary}};
  return obs;
}

}  // namespace kb::agent
