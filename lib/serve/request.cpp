#include "serve/request.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "core/hash.h"
#include "reward/reward.h"

namespace fs = std::filesystem;

namespace kb::serve {

namespace {

const std::set<std::string>& stageNames() {
  static const std::set<std::string> names = {"static", "build", "verify", "profile"};
  return names;
}

eval::Stages parseStages(const Json& j, bool allow_no_static) {
  if (!j.is_array() || j.empty()) throw RequestError(400, "\"stages\" must be a non-empty array of stage names");
  eval::Stages s{.static_check = false, .build = true, .verify = false, .profile = false};
  for (const Json& e : j) {
    if (!e.is_string() || !stageNames().count(e.get<std::string>()))
      throw RequestError(422, "unknown stage " + e.dump() + " (static, build, verify, profile)");
    std::string n = e.get<std::string>();
    if (n == "static") s.static_check = true;
    if (n == "verify") s.verify = true;
    if (n == "profile") s.profile = true;
  }
  if (!allow_no_static) s.static_check = true;  // RequestLimits::allow_no_static
  return s;
}

std::string schemeOf(const Json& j) {
  std::string name;
  if (j.is_null()) return "";
  if (j.is_string()) name = j.get<std::string>();
  else if (j.is_object() && j.contains("scheme") && j["scheme"].is_string()) name = j["scheme"].get<std::string>();
  else throw RequestError(400, "\"reward\" must be a scheme name or {\"scheme\": NAME}");
  if (!reward::parseSchemeName(name)) {
    std::string all;
    for (const auto& n : reward::schemeNames()) all += (all.empty() ? "" : ", ") + n;
    throw RequestError(422, "unknown reward scheme \"" + name + "\" (" + all + ")");
  }
  return name;
}

}  // namespace

void checkFileName(const std::string& name) {
  auto bad = [&](const std::string& why) { throw RequestError(422, "file name \"" + name.substr(0, 200) + "\": " + why); };
  if (name.empty()) bad("empty");
  if (name.size() > 255) bad("longer than 255 characters");
  if (name.front() == '/') bad("absolute (give a path relative to the solution)");
  int depth = 0;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string part = name.substr(start, end - start);
    if (part.empty()) bad("has an empty component");
    if (part == "." || part == "..") bad("has a \".\" or \"..\" component");
    for (char c : part)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
        bad("has a character outside [A-Za-z0-9._-/]");
    if (++depth > 4) bad("is more than 4 levels deep");
    start = end + 1;
  }
}

EvaluationRequest parseEvaluationRequest(const Json& body, const RequestLimits& limits) {
  if (!body.is_object()) throw RequestError(400, "the body must be a JSON object");
  static const std::set<std::string> known = {"task", "files", "device", "stages", "reward",
                                              "deadline_s", "idempotency_key", "priority"};
  for (const auto& [k, v] : body.items())
    if (!known.count(k)) throw RequestError(400, "unknown field \"" + k + "\"");
  EvaluationRequest r;
  if (!body.contains("task") || !body["task"].is_string() || body["task"].get<std::string>().empty())
    throw RequestError(400, "\"task\" (a task id) is required");
  r.task = body["task"].get<std::string>();
  if (!body.contains("files") || !body["files"].is_object() || body["files"].empty())
    throw RequestError(400, "\"files\" (an object: file name -> content) is required");
  if (body["files"].size() > limits.max_files)
    throw RequestError(413, std::to_string(body["files"].size()) + " files: over the limit of " +
                                std::to_string(limits.max_files));
  size_t total = 0;
  for (const auto& [name, content] : body["files"].items()) {
    checkFileName(name);
    if (!content.is_string()) throw RequestError(400, "file \"" + name + "\": content must be a string");
    const std::string& text = content.get_ref<const std::string&>();
    if (text.size() > limits.max_file_bytes)
      throw RequestError(413, "file \"" + name + "\" is " + std::to_string(text.size()) + " bytes: over the limit of " +
                                  std::to_string(limits.max_file_bytes));
    if (text.find('\0') != std::string::npos) throw RequestError(422, "file \"" + name + "\" holds a NUL byte");
    total += text.size();
    r.files[name] = text;
  }
  if (total > limits.max_total_bytes)
    throw RequestError(413, "the files hold " + std::to_string(total) + " bytes: over the limit of " +
                                std::to_string(limits.max_total_bytes));
  // A name that is another's folder ("a" and "a/b") cannot be written.
  for (const auto& [name, text] : r.files)
    for (fs::path dir = fs::path(name).parent_path(); !dir.empty(); dir = dir.parent_path())
      if (r.files.count(dir.string()))
        throw RequestError(422, "file names conflict: \"" + dir.string() + "\" is a file and the folder of \"" + name + "\"");
  if (!r.files.count("forward.cpp") && !r.files.count("model_new.py"))
    throw RequestError(422, "the solution has no forward.cpp (nor model_new.py: docs/solution-format.md)");
  if (body.contains("device")) {
    if (!body["device"].is_string()) throw RequestError(400, "\"device\" must be \"cpu\" or \"cuda\"");
    r.device = body["device"].get<std::string>();
    if (r.device != "cpu" && r.device != "cuda")
      throw RequestError(422, "\"device\" must be \"cpu\" or \"cuda\" (the server picks the GPU)");
  }
  if (body.contains("stages")) r.stages = parseStages(body["stages"], limits.allow_no_static);
  if (r.stages.profile && r.device != "cuda") throw RequestError(422, "the profile stage times on a GPU: give \"device\": \"cuda\"");
  if (body.contains("reward")) r.reward_scheme = schemeOf(body["reward"]);
  if (body.contains("deadline_s")) {
    if (!body["deadline_s"].is_number() || body["deadline_s"].get<double>() <= 0)
      throw RequestError(422, "\"deadline_s\" must be a positive number of seconds");
    r.deadline_seconds = body["deadline_s"].get<double>();
    if (r.deadline_seconds > limits.max_deadline_seconds)
      throw RequestError(422, "\"deadline_s\" is over the server's limit of " + std::to_string(limits.max_deadline_seconds) + " s");
  }
  if (body.contains("idempotency_key")) {
    if (!body["idempotency_key"].is_string() || body["idempotency_key"].get<std::string>().size() > 200)
      throw RequestError(422, "\"idempotency_key\" must be a string of at most 200 characters");
    r.idempotency_key = body["idempotency_key"].get<std::string>();
  }
  if (body.contains("priority")) {
    if (!body["priority"].is_number_integer() || body["priority"].get<int>() < 0 || body["priority"].get<int>() > 9)
      throw RequestError(422, "\"priority\" must be an integer from 0 (last) to 9 (first)");
    r.priority = body["priority"].get<int>();
  }
  return r;
}

Json EvaluationRequest::toJson() const {
  Json stages_j = Json::array();
  if (stages.static_check) stages_j.push_back("static");
  if (stages.build) stages_j.push_back("build");
  if (stages.verify) stages_j.push_back("verify");
  if (stages.profile) stages_j.push_back("profile");
  Json files_j = Json::object();
  for (const auto& [k, v] : files) files_j[k] = v;
  Json j = {{"task", task}, {"files", files_j}, {"device", device}, {"stages", stages_j}};
  if (!reward_scheme.empty()) j["reward"] = {{"scheme", reward_scheme}};
  if (deadline_seconds > 0) j["deadline_s"] = deadline_seconds;
  if (!idempotency_key.empty()) j["idempotency_key"] = idempotency_key;
  j["priority"] = priority;
  return j;
}

std::string EvaluationRequest::digest() const {
  Json j = toJson();
  j.erase("idempotency_key");
  return sha256Hex(j.dump());
}

void writeSolutionFiles(const fs::path& dir, const std::map<std::string, std::string>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  for (const auto& [name, content] : files) {
    fs::path p = dir / name;
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw Error("cannot create " + p.parent_path().string() + ": " + ec.message());
    // O_NOFOLLOW | O_EXCL: the directory is ours and fresh; nothing may be
    // written through a link.
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw Error("cannot write " + p.string() + ": " + std::strerror(errno));
    size_t off = 0;
    while (off < content.size()) {
      ssize_t n = ::write(fd, content.data() + off, content.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        throw Error("error writing " + p.string() + ": " + std::strerror(err));
      }
      off += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) throw Error("error writing " + p.string() + ": " + std::strerror(errno));
  }
}

}  // namespace kb::serve
