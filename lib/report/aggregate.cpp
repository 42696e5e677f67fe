#include "report/aggregate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>

namespace kb::report {

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return kNaN;
  double sum = 0;
  for (double x : xs) sum += std::log(x);
  return std::exp(sum / static_cast<double>(xs.size()));
}

namespace {

constexpr Status kAllStatuses[] = {
    Status::Ok,      Status::StaticViolation, Status::CompileError,
    Status::RuntimeError, Status::Timeout,   Status::Crash,
    Status::Incorrect,    Status::HackDetected, Status::InfraError,
};

double rate(int count, int of) { return of > 0 ? static_cast<double>(count) / of : kNaN; }

GroupStats computeStats(const std::string& name, const std::vector<const TaskRow*>& rows,
                        const ReportOptions& opts) {
  GroupStats g;
  g.group = name;
  for (Status s : kAllStatuses) g.status_counts.emplace_back(std::string(statusName(s)), 0);
  for (double p : opts.fast_p) g.fast_p.push_back(FastP{p});

  std::vector<double> sp_eager, sp_compile;
  double reward_sum = 0;
  for (const TaskRow* r : rows) {
    ++g.results;
    auto it = std::find_if(g.status_counts.begin(), g.status_counts.end(),
                           [&](const auto& e) { return e.first == r->status; });
    if (it == g.status_counts.end())
      g.status_counts.emplace_back(r->status, 1);
    else
      ++it->second;
    if (!r->excluded.empty()) {
      ++g.excluded;
      continue;
    }
    ++g.scored;
    if (r->reward) reward_sum += *r->reward;
    if (!r->correct) continue;
    ++g.correct;
    sp_eager.push_back(r->speedup_eager);
    sp_compile.push_back(r->speedup_compile);
    if (r->faster_than_eager) ++g.faster_than_eager;
    if (r->faster_than_compile) ++g.faster_than_compile;
    for (FastP& f : g.fast_p) {
      if (r->speedup_eager > f.p) ++f.eager;
      if (r->speedup_compile > f.p) ++f.compile;
    }
  }
  g.pass_rate = rate(g.correct, g.scored);
  g.faster_than_eager_rate = rate(g.faster_than_eager, g.scored);
  g.faster_than_compile_rate = rate(g.faster_than_compile, g.scored);
  g.geomean_speedup_eager = geomean(sp_eager);
  g.geomean_speedup_compile = geomean(sp_compile);
  g.mean_reward = g.scored > 0 ? reward_sum / g.scored : kNaN;
  for (FastP& f : g.fast_p) {
    f.eager_rate = rate(f.eager, g.scored);
    f.compile_rate = rate(f.compile, g.scored);
  }
  return g;
}

// Levels by number, then sources by name, then "other".
bool groupLess(const std::string& a, const std::string& b) {
  auto key = [](const std::string& g) {
    std::string n = g.rfind("level ", 0) == 0 ? g.substr(6) : "";
    if (!n.empty() && n.size() < 4 && std::all_of(n.begin(), n.end(), ::isdigit))
      return std::pair{0, std::stoi(n)};
    if (g == "other") return std::pair{2, 0};
    return std::pair{1, 0};
  };
  auto ka = key(a), kb = key(b);
  if (ka != kb) return ka < kb;
  return a < b;
}

std::string commonValue(const std::vector<const Candidate*>& cs, std::string Candidate::*field) {
  std::string v;
  for (const Candidate* c : cs) {
    const std::string& x = c->*field;
    if (x.empty()) continue;
    if (v.empty())
      v = x;
    else if (v != x)
      return "";
  }
  return v;
}

}  // namespace

RunReport aggregate(const Input& in, const ReportOptions& opts) {
  RunReport r;
  r.options = opts;
  r.records = in.records;
  r.sources = in.sources;
  WarningList warn;
  for (const Warning& w : in.warnings) warn.append(w);

  // One result per task: the last candidate, named when there were several.
  std::unordered_map<std::string, std::size_t> last;
  std::unordered_map<std::string, int> seen;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < in.candidates.size(); ++i) {
    const std::string& id = in.candidates[i].task_id;
    if (seen[id]++ == 0) order.push_back(id);
    last[id] = i;
  }
  std::vector<const Candidate*> counted;
  for (const std::string& id : order) {
    if (seen[id] > 1)
      warn.add("duplicate_task", "tasks with more than one candidate (the last one counted)",
               id + " (" + std::to_string(seen[id]) + " candidates)");
    counted.push_back(&in.candidates[last[id]]);
  }

  const Scheme& s = opts.scheme;
  for (const Candidate* c : counted) {
    Score sc = score(*c, s);
    noteExclusion(*c, sc, warn);
    if (!c->level && c->source.empty())
      warn.add("no_group", "tasks without a level or source (grouped as \"other\")", c->task_id);
    TaskRow row;
    row.task_id = c->task_id;
    row.solution_hash = c->solution_hash;
    row.group = groupOf(*c);
    row.status = c->status ? std::string(statusName(*c->status))
                           : (c->input_status.empty() ? "(missing)" : c->input_status);
    row.excluded = sc.excluded;
    row.correct = sc.correct;
    row.reward = sc.reward;
    row.speedup_eager = sc.speedup_eager;
    row.speedup_compile = sc.speedup_compile;
    if (sc.correct) {
      row.faster_than_eager = beats(c->timings, Baseline::Eager, opts.rate_margin, s.stat, s.noise_aware);
      row.faster_than_compile =
          beats(c->timings, Baseline::Compile, opts.rate_margin, s.stat, s.noise_aware);
    }
    r.tasks.push_back(std::move(row));
  }

  std::vector<std::string> names;
  for (const TaskRow& t : r.tasks)
    if (std::find(names.begin(), names.end(), t.group) == names.end()) names.push_back(t.group);
  std::sort(names.begin(), names.end(), groupLess);
  std::vector<const TaskRow*> all;
  for (const TaskRow& t : r.tasks) all.push_back(&t);
  for (const std::string& name : names) {
    std::vector<const TaskRow*> rows;
    for (const TaskRow& t : r.tasks)
      if (t.group == name) rows.push_back(&t);
    r.groups.push_back(computeStats(name, rows, opts));
  }
  r.all = computeStats("all", all, opts);
  r.gpu = commonValue(counted, &Candidate::gpu);
  r.timing_method = commonValue(counted, &Candidate::timing_method);
  r.precision_contract = commonValue(counted, &Candidate::precision_contract);
  r.warnings = std::move(warn).take();
  return r;
}

namespace {

// What happened to one task between A and B (either may be absent).
std::string classify(const TaskRow* a, const TaskRow* b, double margin, bool eager, double& ratio) {
  if (!b) return "only_a";
  if (!a) return "only_b";
  if (!a->excluded.empty() || !b->excluded.empty()) return "excluded";
  if (a->correct && !b->correct) return "broke";
  if (!a->correct && b->correct) return "fixed";
  if (!a->correct) return "still_failing";
  double sa = eager ? a->speedup_eager : a->speedup_compile;
  double sb = eager ? b->speedup_eager : b->speedup_compile;
  ratio = sb / sa;
  // Per unit of baseline time the candidate took 1/s: b() on those.
  if (reward::fasterBy(1 / sb, 1 / sa, margin)) return "faster";
  if (reward::fasterBy(1 / sa, 1 / sb, margin)) return "slower";
  return "same";
}

}  // namespace

Comparison compare(RunReport a, RunReport b) {
  Comparison cmp;
  const double margin = a.options.scheme.margin;
  const bool eager = a.options.primary == Baseline::Eager;
  std::unordered_map<std::string, const TaskRow*> in_a, in_b;
  for (const TaskRow& t : a.tasks) in_a[t.task_id] = &t;
  for (const TaskRow& t : b.tasks) in_b[t.task_id] = &t;
  auto add = [&](const TaskRow* ta, const TaskRow* tb) {
    const TaskRow& any = ta ? *ta : *tb;
    double ratio = kNaN;
    std::string change = classify(ta, tb, margin, eager, ratio);
    cmp.tasks.push_back(TaskChange{any.task_id, any.group,
                                   ta ? std::optional<TaskRow>(*ta) : std::nullopt,
                                   tb ? std::optional<TaskRow>(*tb) : std::nullopt, change, ratio});
  };
  for (const TaskRow& ta : a.tasks) {
    auto it = in_b.find(ta.task_id);
    add(&ta, it == in_b.end() ? nullptr : it->second);
  }
  for (const TaskRow& tb : b.tasks)
    if (!in_a.count(tb.task_id)) add(nullptr, &tb);
  for (const char* kind : {"fixed", "broke", "faster", "slower", "same", "still_failing", "excluded",
                           "only_a", "only_b"}) {
    int n = static_cast<int>(std::count_if(cmp.tasks.begin(), cmp.tasks.end(),
                                           [&](const TaskChange& c) { return c.change == kind; }));
    cmp.changes.emplace_back(kind, n);
  }
  cmp.a = std::move(a);
  cmp.b = std::move(b);
  return cmp;
}

}  // namespace kb::report
