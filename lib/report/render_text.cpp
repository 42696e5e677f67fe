// Number formats, the shared tables, and the terminal rendering.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/render.h"

namespace kb::report {

std::string fmtFixed(double x, int decimals) {
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string fmtPercent(double fraction) {
  if (std::isnan(fraction)) return "-";
  return fmtFixed(100 * fraction, 1) + "%";
}

std::string fmtSpeedup(double x) {
  if (std::isnan(x)) return "-";
  return fmtFixed(x, 2) + "x";
}

std::string fmtThreshold(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

std::string describeSources(const std::vector<std::string>& sources) {
  std::string s;
  if (sources.size() <= 3) {
    for (const std::string& n : sources) s += (s.empty() ? "" : ", ") + n;
    return s;
  }
  // The longest folder prefix (ending in '/') that every path shares.
  std::string common = sources.front().substr(0, sources.front().rfind('/') + 1);
  for (const std::string& n : sources)
    while (!common.empty() && n.compare(0, common.size(), common) != 0) {
      std::size_t up = common.size() >= 2 ? common.rfind('/', common.size() - 2) : std::string::npos;
      common = up == std::string::npos ? "" : common.substr(0, up + 1);
    }
  s = std::to_string(sources.size()) + " files";
  if (common.size() > 1) s += " under " + common.substr(0, common.size() - 1);
  return s;
}

Table summaryTable(const RunReport& r) {
  Table t;
  t.header = {"group", "tasks", "excluded", "pass", "> eager", "> compile", "geomean eager",
              "geomean compile"};
  for (double p : r.options.fast_p) t.header.push_back("fast_" + fmtThreshold(p));
  t.header.push_back("mean reward");
  t.numeric.assign(t.header.size(), true);
  t.numeric[0] = false;
  auto row = [&](const GroupStats& g) {
    std::vector<std::string> cells = {g.group,
                                      std::to_string(g.results),
                                      std::to_string(g.excluded),
                                      fmtPercent(g.pass_rate),
                                      fmtPercent(g.faster_than_eager_rate),
                                      fmtPercent(g.faster_than_compile_rate),
                                      fmtSpeedup(g.geomean_speedup_eager),
                                      fmtSpeedup(g.geomean_speedup_compile)};
    for (const FastP& f : g.fast_p) cells.push_back(fmtPercent(f.eager_rate));
    cells.push_back(fmtFixed(g.mean_reward, 2));
    t.rows.push_back(std::move(cells));
  };
  for (const GroupStats& g : r.groups) row(g);
  row(r.all);
  t.last_is_total = true;
  return t;
}

Table fastPTable(const RunReport& r) {
  Table t;
  t.header = {"group"};
  for (const char* base : {"eager", "compile"})
    for (double p : r.options.fast_p)
      t.header.push_back("fast_" + fmtThreshold(p) + " " + base);
  t.numeric.assign(t.header.size(), true);
  t.numeric[0] = false;
  auto row = [&](const GroupStats& g) {
    std::vector<std::string> cells = {g.group};
    for (const FastP& f : g.fast_p) cells.push_back(fmtPercent(f.eager_rate));
    for (const FastP& f : g.fast_p) cells.push_back(fmtPercent(f.compile_rate));
    t.rows.push_back(std::move(cells));
  };
  for (const GroupStats& g : r.groups) row(g);
  row(r.all);
  t.last_is_total = true;
  return t;
}

namespace {

std::string signedFixed(double x, int decimals, const std::string& unit) {
  if (std::isnan(x)) return "-";
  std::string s = fmtFixed(x, decimals);
  if (s == fmtFixed(0.0, decimals) || s == "-" + fmtFixed(0.0, decimals)) return "0" + unit;
  return (x > 0 ? "+" : "") + s + unit;
}

const GroupStats* findGroup(const RunReport& r, const std::string& name) {
  if (name == "all") return &r.all;
  for (const GroupStats& g : r.groups)
    if (g.group == name) return &g;
  return nullptr;
}

std::string outcome(const std::optional<TaskRow>& t, Baseline primary) {
  if (!t) return "(absent)";
  if (!t->excluded.empty()) return t->status + " (excluded)";
  if (!t->correct) return t->status;
  return "ok " + fmtSpeedup(primary == Baseline::Eager ? t->speedup_eager : t->speedup_compile);
}

}  // namespace

Table compareTable(const Comparison& c) {
  Table t;
  t.header = {"group", "metric", "A", "B", "change"};
  t.numeric = {false, false, true, true, true};
  std::vector<std::string> names;
  for (const auto* rep : {&c.a, &c.b})
    for (const GroupStats& g : rep->groups)
      if (std::find(names.begin(), names.end(), g.group) == names.end()) names.push_back(g.group);
  names.push_back("all");
  for (const std::string& name : names) {
    const GroupStats* ga = findGroup(c.a, name);
    const GroupStats* gb = findGroup(c.b, name);
    auto val = [](const GroupStats* g, auto get) { return g ? get(*g) : kNaN; };
    auto add = [&](const std::string& metric, auto get, int kind) {
      double va = val(ga, get), vb = val(gb, get);
      std::string sa, sb, d;
      if (kind == 0) {  // count
        sa = std::isnan(va) ? "-" : fmtFixed(va, 0);
        sb = std::isnan(vb) ? "-" : fmtFixed(vb, 0);
        d = signedFixed(vb - va, 0, "");
      } else if (kind == 1) {  // rate, change in percentage points
        sa = fmtPercent(va), sb = fmtPercent(vb), d = signedFixed(100 * (vb - va), 1, " pt");
      } else if (kind == 2) {  // speed-up
        sa = fmtSpeedup(va), sb = fmtSpeedup(vb), d = signedFixed(vb - va, 2, "x");
      } else {  // reward
        sa = fmtFixed(va, 2), sb = fmtFixed(vb, 2), d = signedFixed(vb - va, 2, "");
      }
      t.rows.push_back({name, metric, sa, sb, d});
    };
    add("scored tasks", [](const GroupStats& g) { return double(g.scored); }, 0);
    add("pass rate", [](const GroupStats& g) { return g.pass_rate; }, 1);
    add("faster than eager", [](const GroupStats& g) { return g.faster_than_eager_rate; }, 1);
    add("faster than compile", [](const GroupStats& g) { return g.faster_than_compile_rate; }, 1);
    add("geomean vs eager", [](const GroupStats& g) { return g.geomean_speedup_eager; }, 2);
    add("geomean vs compile", [](const GroupStats& g) { return g.geomean_speedup_compile; }, 2);
    for (std::size_t i = 0; i < c.a.options.fast_p.size(); ++i)
      add("fast_" + fmtThreshold(c.a.options.fast_p[i]) + " (eager)",
          [i](const GroupStats& g) { return i < g.fast_p.size() ? g.fast_p[i].eager_rate : kNaN; }, 1);
    add("mean reward", [](const GroupStats& g) { return g.mean_reward; }, 3);
  }
  return t;
}

Table changedTasksTable(const Comparison& c) {
  Table t;
  Baseline primary = c.a.options.primary;
  t.header = {"task", "group", "change", "A", "B", "B/A"};
  t.numeric = {false, false, false, true, true, true};
  // Order: what a reader acts on first.
  const std::vector<std::string> order = {"broke", "fixed", "slower", "faster", "excluded",
                                          "only_a", "only_b", "still_failing"};
  for (const std::string& kind : order) {
    std::vector<const TaskChange*> rows;
    for (const TaskChange& ch : c.tasks)
      if (ch.change == kind) rows.push_back(&ch);
    // Biggest moves first within a kind.
    std::stable_sort(rows.begin(), rows.end(), [](const TaskChange* x, const TaskChange* y) {
      double dx = std::isnan(x->speedup_ratio) ? 0 : std::fabs(std::log(x->speedup_ratio));
      double dy = std::isnan(y->speedup_ratio) ? 0 : std::fabs(std::log(y->speedup_ratio));
      return dx > dy;
    });
    for (const TaskChange* ch : rows) {
      if (kind == "still_failing" && ch->a && ch->b && ch->a->status == ch->b->status) continue;
      t.rows.push_back({ch->task_id, ch->group, ch->change, outcome(ch->a, primary),
                        outcome(ch->b, primary),
                        std::isnan(ch->speedup_ratio) ? "-" : fmtFixed(ch->speedup_ratio, 2)});
    }
  }
  return t;
}

std::string renderTable(const Table& t) {
  std::vector<std::size_t> width(t.header.size(), 0);
  for (std::size_t i = 0; i < t.header.size(); ++i) width[i] = t.header[i].size();
  for (const auto& row : t.rows)
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string& cell = i < cells.size() ? cells[i] : std::string();
      std::string pad(width[i] - std::min(width[i], cell.size()), ' ');
      if (i) s += "  ";
      s += t.numeric[i] ? pad + cell : cell + pad;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(t.header);
  std::size_t total = 0;
  for (std::size_t w : width) total += w;
  out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
  for (const auto& row : t.rows) {
    if (t.last_is_total && &row == &t.rows.back())
      out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
    out += line(row);
  }
  return out;
}

namespace {

std::string schemeLine(const RunReport& r) {
  const Scheme& s = r.options.scheme;
  std::string line = "reward " + std::string(schemeName(s.kind)) + " (margin " +
                     fmtThreshold(100 * s.margin) + "%, " + std::string(statName(s.stat)) +
                     (s.noise_aware ? ", noise-aware" : "") + ")";
  line += "; rates at margin " + fmtThreshold(100 * r.options.rate_margin) + "%";
  if (!r.gpu.empty()) line += "; GPU " + r.gpu;
  if (!r.timing_method.empty()) line += "; timing " + r.timing_method;
  if (!r.precision_contract.empty()) line += "; precision contract " + r.precision_contract;
  if (s.kind == SchemeKind::Correctness) line += "\ncorrectness only (untimed): the reward is verification's; speed-up columns need timings";
  return line;
}

}  // namespace

std::string renderText(const RunReport& r) {
  std::string out = r.options.title + ": " + std::to_string(r.all.results) + " tasks, " +
                    std::to_string(r.all.excluded) + " excluded\n";
  out += schemeLine(r) + "\n\n";
  out += renderTable(summaryTable(r));
  out += "\nfast_p over eager (KernelBench); rates over scored tasks; geomeans over correct ones.\n";
  return out;
}

std::string renderText(const Comparison& c) {
  auto name = [](const RunReport& r) {
    std::string s;
    for (const std::string& n : r.sources) s += (s.empty() ? "" : ", ") + n;
    return s + " (" + std::to_string(r.all.results) + " tasks)";
  };
  std::string out = "A = " + name(c.a) + "\nB = " + name(c.b) + "\n\n";
  out += renderTable(compareTable(c));
  out += "\nchanges (over " + std::string(baselineName(c.a.options.primary)) + "):";
  for (const auto& [kind, n] : c.changes) out += " " + kind + " " + std::to_string(n) + ",";
  out.pop_back();
  out += "\n";
  Table changed = changedTasksTable(c);
  if (!changed.rows.empty()) out += "\n" + renderTable(changed);
  return out;
}

}  // namespace kb::report
