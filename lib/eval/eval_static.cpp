// The static stage: the Clang checker (lib/analyze) adapted once. Its own
// translation unit, reached from evaluate() only through StaticChecker's
// virtual check(), so that a tool that never makes a StaticChecker (kbprof)
// links no Clang.
#include <sstream>

#include "core/error.h"
#include "eval/eval.h"
#ifdef KB_HAVE_CLANG
#include "analyze/render.h"
#include "eval/python_static.h"
#endif

namespace fs = std::filesystem;

namespace kb::eval {

StaticChecker::StaticChecker(fs::path policy) : path_(std::move(policy)) {}
StaticChecker::~StaticChecker() = default;

const analyze::StaticPolicy& StaticChecker::policy() const {
#ifdef KB_HAVE_CLANG
  std::call_once(once_, [&] { policy_ = analyze::loadStaticPolicy(path_.empty() ? analyze::defaultPolicyPath() : path_); });
  return policy_;
#else
  throw Error("this build has no Clang checker");
#endif
}

StaticOutcome StaticChecker::check(const solution::Solution& solution, const StaticOptions& so) const {
  StaticOutcome out;
#ifdef KB_HAVE_CLANG
  out.available = true;
  ReportHeader header = makeHeader("kbcheck", "static", so.task_id, solution.hash, Status::Ok, nowIso8601(), "");
  const analyze::StaticPolicy& pol = policy();
  analyze::CheckOptions options = analyze::defaultCheckOptions();
  if (!so.gpu_arch.empty()) options.gpu_arch = so.gpu_arch;
  if (!so.cuda_path.empty()) options.cuda_path = so.cuda_path;
  if (!so.cache_dir.empty()) options.cache_dir = so.cache_dir;
  options.jobs = so.jobs;
  out.result = solution.isPython() ? checkPythonSolution(solution, pol, options) : analyze::checkSolution(solution, pol, options);
  header.finished_at = nowIso8601();
  header.status = out.status = analyze::staticStatus(out.result);
  out.seconds = out.result.seconds;
  out.report = analyze::staticReportJson(header, solution, pol, out.result);
  if (out.status != Status::Ok) {
    const analyze::StaticResult& result = out.result;
    std::string first = result.infra_failed ? result.infra_message : "";
    for (const auto& f : result.findings)
      if (first.empty() && f.severity == analyze::Severity::Error)
        first = f.file + ":" + std::to_string(f.line) + ": [" + f.rule + "] " + f.message;
    for (const auto& text : result.parse_errors) {  // Clang's own: the first error line
      std::istringstream in(text);
      std::string line;
      while (first.empty() && std::getline(in, line))
        if (line.find("error:") != std::string::npos) first = line;
    }
    std::string root = solution.root.string() + "/";
    for (auto pos = first.find(root); pos != std::string::npos; pos = first.find(root)) first.erase(pos, root.size());
    out.message = first;
  }
#else
  (void)solution;
  (void)so;
  out.report = nullptr;
#endif
  return out;
}

}  // namespace kb::eval
