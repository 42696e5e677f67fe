// One self-contained HTML page per report: inline CSS, inline SVG charts, no
// script and no external resource, so it opens anywhere (a browser, a CI
// artifact viewer, an e-mail attachment) and renders the same.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "core/report.h"
#include "report/render.h"

namespace kb::report {
namespace {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

// SVG coordinates: one decimal is finer than a pixel. Every number that
// reaches an SVG attribute goes through here; a value that is not finite
// (NaN, inf: an untimed task's speed-up) is the caller's bug, since marks of
// such values are skipped, and is written as 0 rather than as "nan", which
// browsers draw at the origin (issue 38: stray marks and bars at the edge).
std::string c1(double x) {
  if (!std::isfinite(x)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

// A speed-up that can be drawn: measured (finite) and positive. A correct
// task without timings (the correctness scheme, a baseline not timed) has a
// NaN speed-up: it is listed, never drawn.
bool drawable(double speedup) { return std::isfinite(speedup) && speedup > 0; }

const char* groupColor(std::size_t i) {
  static constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
                                            "#edc948", "#ff9da7", "#9c755f", "#e15759", "#bab0ac"};
  return kColors[i % (sizeof kColors / sizeof kColors[0])];
}

const char* statusColor(const std::string& s) {
  if (s == "ok") return "#59a14f";
  if (s == "static_violation") return "#b07aa1";
  if (s == "compile_error") return "#f28e2b";
  if (s == "runtime_error") return "#ff9da7";
  if (s == "timeout") return "#9c755f";
  if (s == "crash") return "#8c1c13";
  if (s == "incorrect") return "#e15759";
  if (s == "hack_detected") return "#2b2b2b";
  if (s == "infra_error") return "#bab0ac";
  return "#dcdcdc";  // outside the closed set
}

double primaryOf(const TaskRow& t, Baseline b) {
  return b == Baseline::Eager ? t.speedup_eager : t.speedup_compile;
}

std::string tickLabel(int e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gx", std::ldexp(1.0, e));
  return buf;
}

// A log2 axis over whole powers of two that covers `values` and at least
// [1/2, 2]; values beyond +-2^7 are drawn at the edge.
struct LogAxis {
  int lo = -1, hi = 1;
  double a = 0, b = 1;  // pixel ends
  static LogAxis cover(const std::vector<double>& values) {
    LogAxis ax;
    for (double v : values) {
      if (!(v > 0)) continue;
      double l = std::log2(v);
      ax.lo = std::min(ax.lo, static_cast<int>(std::floor(l)));
      ax.hi = std::max(ax.hi, static_cast<int>(std::ceil(l)));
    }
    ax.lo = std::max(ax.lo, -7);
    ax.hi = std::min(ax.hi, 7);
    return ax;
  }
  double map(double v) const {
    double l = std::clamp(std::log2(v), double(lo), double(hi));
    return a + (l - lo) / (hi - lo) * (b - a);
  }
};

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  double pos = q * (sorted.size() - 1);
  std::size_t i = static_cast<std::size_t>(pos);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (pos - i) * (sorted[i + 1] - sorted[i]);
}

std::string svgOpen(double w, double h, const std::string& label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + c1(w) + " " + c1(h) +
         "\" width=\"" + c1(w) + "\" height=\"" + c1(h) + "\" role=\"img\" aria-label=\"" + esc(label) +
         "\">\n";
}

struct Points {
  std::string label;
  std::string color;
  std::vector<std::pair<double, std::string>> values;  // speed-up, task id (timed correct tasks)
  std::size_t untimed = 0;                             // correct tasks without this speed-up
};

// Speed-up distribution: one row per group, a box (quartiles, median,
// whiskers to min and max) over the dots of every correct task.
std::string distributionSvg(const std::vector<Points>& rows, const LogAxis& shared, double margin,
                            const std::string& title) {
  const double W = 466, left = 82, right = 16, top = 30, rowH = 48, bottom = 40;
  const double H = top + rowH * std::max<std::size_t>(rows.size(), 1) + bottom;
  LogAxis ax = shared;
  ax.a = left;
  ax.b = W - right;
  std::string s = svgOpen(W, H, title);
  s += "<text class=\"ct\" x=\"" + c1(left) + "\" y=\"17\">" + esc(title) + "</text>\n";
  const double plot_bottom = H - bottom;
  // Where b() holds: more than `margin` faster.
  double xm = ax.map(1 / (1 - margin));
  s += "<rect x=\"" + c1(xm) + "\" y=\"" + c1(top) + "\" width=\"" + c1(ax.b - xm) + "\" height=\"" +
       c1(plot_bottom - top) + "\" fill=\"#eaf5ea\"/>\n";
  for (int e = ax.lo; e <= ax.hi; ++e) {
    double x = ax.map(std::ldexp(1.0, e));
    s += "<line x1=\"" + c1(x) + "\" x2=\"" + c1(x) + "\" y1=\"" + c1(top) + "\" y2=\"" + c1(plot_bottom) +
         "\" stroke=\"" + (e == 0 ? "#777" : "#e2e2e2") + "\"" +
         (e == 0 ? " stroke-dasharray=\"4 3\"" : "") + "/>\n";
    s += "<text x=\"" + c1(x) + "\" y=\"" + c1(plot_bottom + 14) + "\" text-anchor=\"middle\">" +
         tickLabel(e) + "</text>\n";
  }
  s += "<text x=\"" + c1((ax.a + ax.b) / 2) + "\" y=\"" + c1(H - 8) +
       "\" text-anchor=\"middle\" class=\"ax\">speed-up (log scale); shaded: faster by more than " +
       fmtThreshold(100 * margin) + "%</text>\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Points& row = rows[i];
    double yc = top + rowH * i + rowH / 2;
    s += "<text x=\"" + c1(left - 8) + "\" y=\"" + c1(yc + 4) + "\" text-anchor=\"end\">" +
         esc(row.label) + "</text>\n";
    std::vector<double> v;
    for (const auto& p : row.values) v.push_back(p.first);
    std::sort(v.begin(), v.end());
    if (v.empty()) {
      s += "<text x=\"" + c1(left + 6) + "\" y=\"" + c1(yc + 4) + "\" class=\"note\">" +
           (row.untimed > 0 ? std::to_string(row.untimed) + " correct, untimed" : std::string("no correct task")) +
           "</text>\n";
      continue;
    }
    if (row.untimed > 0)
      s += "<text x=\"" + c1(ax.b) + "\" y=\"" + c1(yc - 14) + "\" text-anchor=\"end\" class=\"note\">+" +
           std::to_string(row.untimed) + " untimed</text>\n";
    double q1 = quantile(v, 0.25), q2 = quantile(v, 0.5), q3 = quantile(v, 0.75);
    s += "<line x1=\"" + c1(ax.map(v.front())) + "\" x2=\"" + c1(ax.map(v.back())) + "\" y1=\"" + c1(yc) +
         "\" y2=\"" + c1(yc) + "\" stroke=\"" + row.color + "\" stroke-width=\"1.2\"/>\n";
    s += "<rect x=\"" + c1(ax.map(q1)) + "\" y=\"" + c1(yc - 11) + "\" width=\"" +
         c1(std::max(1.0, ax.map(q3) - ax.map(q1))) + "\" height=\"22\" fill=\"" + row.color +
         "\" fill-opacity=\"0.16\" stroke=\"" + row.color + "\"><title>" + esc(row.label) +
         ": quartiles " + fmtSpeedup(q1) + " / " + fmtSpeedup(q2) + " / " + fmtSpeedup(q3) +
         "</title></rect>\n";
    for (std::size_t j = 0; j < row.values.size(); ++j) {
      // Deterministic jitter so that equal speed-ups stay visible.
      double dy = (static_cast<double>((j * 37) % 17) / 16.0 - 0.5) * 26;
      s += "<circle cx=\"" + c1(ax.map(row.values[j].first)) + "\" cy=\"" + c1(yc + dy) +
           "\" r=\"2.3\" fill=\"" + row.color + "\" fill-opacity=\"0.55\"><title>" +
           esc(row.values[j].second) + ": " + fmtSpeedup(row.values[j].first) + "</title></circle>\n";
    }
    s += "<line x1=\"" + c1(ax.map(q2)) + "\" x2=\"" + c1(ax.map(q2)) + "\" y1=\"" + c1(yc - 13) +
         "\" y2=\"" + c1(yc + 13) + "\" stroke=\"#222\" stroke-width=\"2\"/>\n";
  }
  s += "</svg>\n";
  return s;
}

struct Curve {
  std::string label;
  std::string color;
  bool bold = false;
  bool dashed = false;
  std::vector<double> speedups;  // correct tasks
  int scored = 0;                // the denominator
};

// fast_p(p) = #(correct and speed-up > p) / scored, a falling step curve.
std::string fastPSvg(const std::vector<Curve>& curves, double pmax, const std::vector<double>& marks,
                     const std::string& title) {
  const double W = 466, left = 48, right = 16, top = 30, plotH = 200, bottom = 40;
  const double H = top + plotH + bottom;
  auto X = [&](double p) { return left + std::min(p, pmax) / pmax * (W - left - right); };
  auto Y = [&](double f) { return top + (1 - f) * plotH; };
  std::string s = svgOpen(W, H, title);
  s += "<text class=\"ct\" x=\"" + c1(left) + "\" y=\"17\">" + esc(title) + "</text>\n";
  for (int k = 0; k <= 4; ++k) {
    double y = Y(k / 4.0);
    s += "<line x1=\"" + c1(left) + "\" x2=\"" + c1(W - right) + "\" y1=\"" + c1(y) + "\" y2=\"" + c1(y) +
         "\" stroke=\"#e2e2e2\"/>\n";
    s += "<text x=\"" + c1(left - 6) + "\" y=\"" + c1(y + 4) + "\" text-anchor=\"end\">" +
         std::to_string(25 * k) + "%</text>\n";
  }
  double step = pmax <= 4 ? 0.5 : 1;
  for (double p = 0; p <= pmax + 1e-9; p += step)
    s += "<text x=\"" + c1(X(p)) + "\" y=\"" + c1(top + plotH + 14) + "\" text-anchor=\"middle\">" +
         fmtThreshold(p) + "</text>\n";
  for (double p : marks) {
    if (p <= 0 || p > pmax) continue;
    s += "<line x1=\"" + c1(X(p)) + "\" x2=\"" + c1(X(p)) + "\" y1=\"" + c1(top) + "\" y2=\"" +
         c1(top + plotH) + "\" stroke=\"#999\" stroke-dasharray=\"3 3\"/>\n";
  }
  s += "<text x=\"" + c1((left + W - right) / 2) + "\" y=\"" + c1(H - 8) +
       "\" text-anchor=\"middle\" class=\"ax\">p (speed-up threshold)</text>\n";
  for (const Curve& c : curves) {
    if (c.scored == 0) continue;
    std::vector<double> v;
    for (double x : c.speedups)
      if (drawable(x)) v.push_back(x);  // an untimed task is faster than no p
    std::sort(v.begin(), v.end());
    auto f = [&](double p) {
      auto it = std::upper_bound(v.begin(), v.end(), p);
      return static_cast<double>(v.end() - it) / c.scored;
    };
    std::string d = "M" + c1(X(0)) + "," + c1(Y(f(0)));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] > pmax) break;
      if (i + 1 < v.size() && v[i + 1] == v[i]) continue;
      d += "H" + c1(X(v[i])) + "V" + c1(Y(f(v[i])));
    }
    d += "H" + c1(X(pmax));
    s += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + c.color + "\" stroke-width=\"" +
         (c.bold ? "2.4" : "1.6") + "\"" + (c.dashed ? " stroke-dasharray=\"6 4\"" : "") + "><title>" +
         esc(c.label) + "</title></path>\n";
    if (c.bold) {
      for (double p : marks) {
        if (p > pmax) continue;
        s += "<circle cx=\"" + c1(X(p)) + "\" cy=\"" + c1(Y(f(p))) + "\" r=\"3.2\" fill=\"" + c.color +
             "\"><title>" + esc(c.label) + " fast_" + fmtThreshold(p) + " = " + fmtPercent(f(p)) +
             "</title></circle>\n";
      }
    }
  }
  s += "</svg>\n";
  return s;
}

double pmaxFor(const std::vector<double>& all, const std::vector<double>& marks) {
  double m = 2.5;
  for (double p : marks) m = std::max(m, p + 0.5);
  for (double v : all)
    if (drawable(v)) m = std::max(m, std::min(v * 1.05, 8.0));
  return std::ceil(m * 2) / 2;
}

// Per-task bars: every correct task, sorted by speed-up, on a log axis
// around 1x, coloured by group; the correct tasks without a speed-up
// (untimed) after them, a label each and no bar.
std::string taskBarsSvg(const RunReport& r, const std::vector<std::string>& groups) {
  Baseline b = r.options.primary;
  std::vector<const TaskRow*> rows, untimed;
  for (const TaskRow& t : r.tasks)
    if (t.correct) (drawable(primaryOf(t, b)) ? rows : untimed).push_back(&t);
  std::stable_sort(rows.begin(), rows.end(), [&](const TaskRow* x, const TaskRow* y) {
    return primaryOf(*x, b) > primaryOf(*y, b);
  });
  std::vector<double> v;
  for (const TaskRow* t : rows) v.push_back(primaryOf(*t, b));
  const double W = 960, left = 52, right = 12, top = 14, plotH = 240, bottom = 34;
  const double H = top + plotH + bottom;
  LogAxis ax = LogAxis::cover(v);
  ax.a = top + plotH;  // bottom pixel for the low end
  ax.b = top;
  std::string label = "speed-up over " + std::string(baselineName(b)) + " per task";
  std::string s = svgOpen(W, H, label);
  for (int e = ax.lo; e <= ax.hi; ++e) {
    double y = ax.map(std::ldexp(1.0, e));
    s += "<line x1=\"" + c1(left) + "\" x2=\"" + c1(W - right) + "\" y1=\"" + c1(y) + "\" y2=\"" + c1(y) +
         "\" stroke=\"" + (e == 0 ? "#555" : "#e2e2e2") + "\"/>\n";
    s += "<text x=\"" + c1(left - 6) + "\" y=\"" + c1(y + 4) + "\" text-anchor=\"end\">" + tickLabel(e) +
         "</text>\n";
  }
  double ym = ax.map(1 / (1 - r.options.scheme.margin));
  s += "<line x1=\"" + c1(left) + "\" x2=\"" + c1(W - right) + "\" y1=\"" + c1(ym) + "\" y2=\"" + c1(ym) +
       "\" stroke=\"#59a14f\" stroke-dasharray=\"4 3\"><title>faster by more than " +
       fmtThreshold(100 * r.options.scheme.margin) + "%</title></line>\n";
  const std::size_t columns = rows.size() + untimed.size();
  double bw = columns == 0 ? 0 : (W - left - right) / columns;
  double gap = bw > 5 ? 1 : 0;
  double y1 = ax.map(1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double y = ax.map(v[i]);
    std::size_t gi = std::find(groups.begin(), groups.end(), rows[i]->group) - groups.begin();
    s += "<rect x=\"" + c1(left + i * bw) + "\" y=\"" + c1(std::min(y, y1)) + "\" width=\"" +
         c1(std::max(0.6, bw - gap)) + "\" height=\"" + c1(std::max(0.8, std::fabs(y - y1))) +
         "\" fill=\"" + groupColor(gi) + "\"><title>" + esc(rows[i]->task_id) + " (" +
         esc(rows[i]->group) + "): " + fmtSpeedup(v[i]) + "</title></rect>\n";
    // A bar cut at the axis's end says its value: across a wide bar, along
    // a narrower one (side by side, 18 bars' "176.73x" labels touched), an
    // arrow where even that does not fit.
    const bool over = v[i] > std::ldexp(1.0, ax.hi), under = v[i] < std::ldexp(1.0, ax.lo);
    if (over || under) {
      const double xc = left + i * bw + bw / 2;
      const std::string title = "<title>" + esc(rows[i]->task_id) + ": " + fmtSpeedup(v[i]) + ", beyond the axis</title>";
      const std::string style = "style=\"fill:#fff;font-weight:600\">";
      if (bw >= 64) {
        s += "<text x=\"" + c1(xc) + "\" y=\"" + c1(over ? ax.b + 11 : ax.a - 4) + "\" text-anchor=\"middle\" " +
             style + esc(fmtSpeedup(v[i])) + title + "</text>\n";
      } else if (bw >= 12) {
        // Read upwards, from the bar's cut end inwards.
        const double x = xc + 4, y = over ? ax.b + 4 : ax.a - 4;
        s += "<text x=\"" + c1(x) + "\" y=\"" + c1(y) + "\" transform=\"rotate(-90 " + c1(x) + " " + c1(y) +
             ")\" text-anchor=\"" + (over ? "end" : "start") + "\" " + style + esc(fmtSpeedup(v[i])) + title +
             "</text>\n";
      } else {
        s += "<text x=\"" + c1(xc) + "\" y=\"" + c1(over ? ax.b + 11 : ax.a - 4) + "\" text-anchor=\"middle\" " +
             style + (over ? "\u2191" : "\u2193") + title + "</text>\n";
      }
    }
  }
  // Untimed: no bar, a label read upwards from the 1x line (an arrow's
  // width below 12 px), the task named in its tooltip.
  for (std::size_t k = 0; k < untimed.size(); ++k) {
    const TaskRow& t = *untimed[k];
    const double xc = left + (rows.size() + k) * bw + bw / 2;
    const std::string title = "<title>" + esc(t.task_id) + " (" + esc(t.group) + "): correct, untimed</title>";
    if (bw >= 12) {
      const double x = xc + 4, y = y1 - 4;
      s += "<text x=\"" + c1(x) + "\" y=\"" + c1(y) + "\" transform=\"rotate(-90 " + c1(x) + " " + c1(y) +
           ")\" class=\"note\">untimed" + title + "</text>\n";
    } else {
      s += "<text x=\"" + c1(xc) + "\" y=\"" + c1(y1 - 4) + "\" text-anchor=\"middle\" class=\"note\">\u00b7" +
           title + "</text>\n";
    }
  }
  std::size_t not_drawn = r.tasks.size() - rows.size() - untimed.size();
  s += "<text x=\"" + c1((left + W - right) / 2) + "\" y=\"" + c1(H - 10) +
       "\" text-anchor=\"middle\" class=\"ax\">" + std::to_string(rows.size()) +
       " correct tasks, fastest first (log scale); " +
       (untimed.empty() ? "" : std::to_string(untimed.size()) + " correct and untimed, labelled; ") +
       std::to_string(not_drawn) + " not correct or excluded, not drawn</text>\n";
  s += "</svg>\n";
  return s;
}

// Status breakdown: one stacked bar per group, every task counted.
std::string statusSvg(const RunReport& r) {
  std::vector<const GroupStats*> rows;
  for (const GroupStats& g : r.groups) rows.push_back(&g);
  rows.push_back(&r.all);
  const double W = 960, left = 82, right = 76, top = 8, rowH = 30, bottom = 6;
  const double H = top + rowH * rows.size() + bottom;
  std::string s = svgOpen(W, H, "status breakdown");
  const double plotW = W - left - right;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GroupStats& g = *rows[i];
    double y = top + rowH * i + 4;
    s += "<text x=\"" + c1(left - 8) + "\" y=\"" + c1(y + 15) + "\" text-anchor=\"end\"" +
         (g.group == "all" ? " font-weight=\"600\"" : "") + ">" + esc(g.group) + "</text>\n";
    double x = left;
    for (const auto& [name, n] : g.status_counts) {
      if (n == 0 || g.results == 0) continue;
      double w = plotW * n / g.results;
      s += "<rect x=\"" + c1(x) + "\" y=\"" + c1(y) + "\" width=\"" + c1(w) + "\" height=\"21\" fill=\"" +
           statusColor(name) + "\"><title>" + esc(g.group) + ", " + esc(name) + ": " + std::to_string(n) +
           " (" + fmtPercent(double(n) / g.results) + ")</title></rect>\n";
      if (w >= 24) {
        // Dark digits on the light fills; inline style, since the page's CSS
        // would override a fill attribute.
        bool light = name == "infra_error" || name == "runtime_error" || !parseStatus(name);
        s += "<text x=\"" + c1(x + w / 2) + "\" y=\"" + c1(y + 15) +
             "\" text-anchor=\"middle\" style=\"fill:" + (light ? "#222" : "#fff") + "\">" +
             std::to_string(n) + "</text>\n";
      }
      x += w;
    }
    s += "<text x=\"" + c1(W - right + 8) + "\" y=\"" + c1(y + 15) + "\">" + std::to_string(g.results) +
         " tasks</text>\n";
  }
  s += "</svg>\n";
  return s;
}

std::string htmlTable(const Table& t, const std::string& cls = "") {
  std::string s = "<table" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">\n<thead><tr>";
  for (std::size_t i = 0; i < t.header.size(); ++i) {
    // "> eager" must not wrap after its ">".
    std::string h = esc(t.header[i]);
    if (h.rfind("&gt; ", 0) == 0) h = "&gt;&nbsp;" + h.substr(5);
    s += std::string("<th") + (t.numeric[i] ? " class=\"n\"" : "") + ">" + h + "</th>";
  }
  s += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    bool total = t.last_is_total && &row == &t.rows.back();
    s += total ? "<tr class=\"total\">" : "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i)
      s += std::string("<td") + (i < t.numeric.size() && t.numeric[i] ? " class=\"n\"" : "") + ">" +
           esc(row[i]) + "</td>";
    s += "</tr>\n";
  }
  s += "</tbody></table>\n";
  return s;
}

constexpr std::string_view kStyle = R"CSS(
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #1d1d1f; background: #f3f4f6; margin: 0; }
main { max-width: 1010px; margin: 0 auto; padding: 22px 28px 40px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 30px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #e5e5e5; }
p.meta { color: #555; margin: 0 0 14px; }
p.note, .note { color: #666; font-size: 12px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 13px; }
th, td { padding: 4px 9px; border-bottom: 1px solid #eee; white-space: nowrap; text-align: left; }
th { background: #f7f7f8; font-weight: 600; white-space: normal; vertical-align: bottom; }
th.n, td.n { text-align: right; }
tr.total td { font-weight: 600; border-top: 2px solid #bbb; }
.scroll { overflow-x: auto; }
.charts { display: flex; flex-wrap: wrap; gap: 8px 18px; }
svg { max-width: 100%; height: auto; }
svg text { font-size: 11px; fill: #333; }
svg text.ct { font-size: 13px; font-weight: 600; fill: #1d1d1f; }
svg text.ax, svg text.note { fill: #666; }
.legend { margin: 4px 0 0; font-size: 12px; }
.legend span { display: inline-block; margin-right: 14px; white-space: nowrap; }
.sw { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 5px;
      vertical-align: -1px; }
.warn { background: #fff8e1; border: 1px solid #efd48a; border-radius: 6px; padding: 8px 14px;
        margin: 10px 0; }
.warn ul { margin: 4px 0; padding-left: 20px; }
.badges span { display: inline-block; border-radius: 11px; padding: 2px 10px; margin: 0 6px 6px 0;
               background: #eef1f5; font-size: 13px; }
details summary { cursor: pointer; color: #333; margin: 6px 0; }
table.pivot td.n { line-height: 1.25; }
.d { display: block; font-size: 11px; }
.d.up { color: #2e7d32; } .d.down { color: #c62828; } .d.flat { color: #888; }
)CSS";

std::string pageOpen(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta name=\"generator\" content=\"kbreward\">\n"
         "<link rel=\"icon\" href=\"data:,\">\n<title>" +
         esc(title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n<main>\n";
}

std::string pageClose() { return "</main>\n</body>\n</html>\n"; }

std::string warningsHtml(const std::vector<Warning>& ws) {
  if (ws.empty()) return "";
  std::string s = "<div class=\"warn\"><strong>Warnings</strong> (the input had problems; nothing "
                  "was dropped silently)<ul>\n";
  for (const Warning& w : ws) s += "<li>" + esc(formatWarning(w, 12)) + "</li>\n";
  return s + "</ul></div>\n";
}

std::string legend(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string s = "<div class=\"legend\">";
  for (const auto& [label, color] : entries)
    s += "<span><i class=\"sw\" style=\"background:" + color + "\"></i>" + esc(label) + "</span>";
  return s + "</div>\n";
}

std::string sourcesText(const RunReport& r) { return describeSources(r.sources); }

std::string schemeText(const RunReport& r) {
  const Scheme& s = r.options.scheme;
  return "reward " + std::string(schemeName(s.kind)) + " (margin " + fmtThreshold(100 * s.margin) +
         "%, " + std::string(statName(s.stat)) + (s.noise_aware ? ", noise-aware" : "") +
         "); faster-than rates at margin " + fmtThreshold(100 * r.options.rate_margin) + "%" +
         (s.kind == SchemeKind::Correctness ? "; correctness only (untimed)" : "");
}

std::vector<Curve> curvesFor(const RunReport& r, Baseline b) {
  std::vector<Curve> curves;
  auto collect = [&](const std::string& group) {
    std::vector<double> v;
    for (const TaskRow& t : r.tasks)
      if (t.correct && (group == "all" || t.group == group)) v.push_back(primaryOf(t, b));
    return v;
  };
  for (std::size_t i = 0; i < r.groups.size(); ++i)
    curves.push_back(Curve{r.groups[i].group, groupColor(i), false, false, collect(r.groups[i].group),
                           r.groups[i].scored});
  curves.push_back(Curve{"all", "#222", true, false, collect("all"), r.all.scored});
  return curves;
}

// The speed-up distribution, fast_p and per-task sections of a run with at
// least one measured speed-up (`all_speedups`, both baselines' together).
std::string speedupSectionsHtml(const RunReport& r, const std::vector<std::string>& groups,
                                const std::vector<std::pair<std::string, std::string>>& group_legend,
                                const std::vector<double>& all_speedups) {
  LogAxis shared = LogAxis::cover(all_speedups);
  std::string s = "<h2>Speed-up distribution per group</h2>\n<div class=\"charts\">\n";
  std::size_t untimed = 0;
  for (Baseline b : {Baseline::Eager, Baseline::Compile}) {
    std::vector<Points> rows;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      Points p{groups[i], groupColor(i), {}};
      for (const TaskRow& t : r.tasks) {
        if (!t.correct || t.group != groups[i]) continue;
        if (drawable(primaryOf(t, b))) p.values.emplace_back(primaryOf(t, b), t.task_id);
        else ++p.untimed;
      }
      untimed += p.untimed;
      rows.push_back(std::move(p));
    }
    s += distributionSvg(rows, shared, r.options.scheme.margin,
                         "over " + std::string(b == Baseline::Eager ? "eager" : "torch.compile"));
  }
  s += "</div>\n<p class=\"note\">Correct tasks only" +
       std::string(untimed > 0 ? ", timed ones drawn (the untimed are counted beside their group)" : "") +
       ". Box: quartiles; bar: median; line: min to max.</p>\n";

  s += "<h2>fast_p</h2>\n<div class=\"charts\">\n";
  double pmax = pmaxFor(all_speedups, r.options.fast_p);
  for (Baseline b : {Baseline::Eager, Baseline::Compile})
    s += fastPSvg(curvesFor(r, b), pmax, r.options.fast_p,
                  "fast_p over " + std::string(b == Baseline::Eager ? "eager" : "torch.compile"));
  s += "</div>\n";
  auto curve_legend = group_legend;
  curve_legend.emplace_back("all", "#222");
  s += legend(curve_legend);
  s += "<div class=\"scroll\">" + htmlTable(fastPTable(r)) + "</div>\n";

  s += "<h2>Per task, sorted by speed-up over " +
       std::string(r.options.primary == Baseline::Eager ? "eager" : "torch.compile") + "</h2>\n";
  s += taskBarsSvg(r, groups);
  s += legend(group_legend);
  return s;
}

}  // namespace

std::string renderHtml(const RunReport& r) {
  std::vector<std::string> groups;
  for (const GroupStats& g : r.groups) groups.push_back(g.group);
  std::vector<std::pair<std::string, std::string>> group_legend;
  for (std::size_t i = 0; i < groups.size(); ++i) group_legend.emplace_back(groups[i], groupColor(i));

  std::string s = pageOpen(r.options.title);
  s += "<h1>" + esc(r.options.title) + "</h1>\n";
  s += "<p class=\"meta\">" + std::to_string(r.all.results) + " tasks (" + std::to_string(r.all.excluded) +
       " excluded) from " + esc(sourcesText(r)) + " &middot; " + esc(schemeText(r));
  if (!r.gpu.empty()) s += " &middot; GPU " + esc(r.gpu);
  if (!r.timing_method.empty()) s += " &middot; timing " + esc(r.timing_method);
  if (!r.precision_contract.empty()) s += " &middot; precision contract " + esc(r.precision_contract);
  s += " &middot; generated " + esc(nowIso8601()) + "</p>\n";
  s += warningsHtml(r.warnings);

  s += "<h2>Summary</h2>\n<div class=\"scroll\">" + htmlTable(summaryTable(r), "summary") + "</div>\n";
  s += "<p class=\"note\">Rates are over scored tasks (infra errors and unreadable records are "
       "excluded); geometric means over correct tasks; fast_p is KernelBench's: correct and speed-up "
       "over eager &gt; p.</p>\n";

  // One log axis for both panels, so that they compare at a glance. Only
  // measured speed-ups are drawn: with none (a correctness-only run, or no
  // task correct and timed) the speed-up sections are one line instead.
  std::vector<double> all_speedups;
  for (const TaskRow& t : r.tasks)
    if (t.correct)
      for (double x : {t.speedup_eager, t.speedup_compile})
        if (drawable(x)) all_speedups.push_back(x);
  if (all_speedups.empty()) {
    s += "<h2>Speed-ups</h2>\n<p class=\"note\">" +
         std::string(r.options.scheme.kind == SchemeKind::Correctness
                         ? "A correctness-only run: no task was timed"
                         : "No correct task was timed") +
         ", so there is no speed-up distribution, fast_p curve or per-task speed-up to draw.</p>\n";
  } else {
    s += speedupSectionsHtml(r, groups, group_legend, all_speedups);
  }

  s += "<h2>Status breakdown</h2>\n" + statusSvg(r);
  std::vector<std::pair<std::string, std::string>> status_legend;
  for (const auto& [name, n] : r.all.status_counts)
    if (n > 0) status_legend.emplace_back(name + " (" + std::to_string(n) + ")", statusColor(name));
  s += legend(status_legend);

  Table tasks;
  tasks.header = {"task", "group", "status", "excluded", "reward", "vs eager", "vs compile"};
  tasks.numeric = {false, false, false, false, true, true, true};
  for (const TaskRow& t : r.tasks)
    tasks.rows.push_back({t.task_id, t.group, t.status, t.excluded,
                          t.reward ? fmtFixed(*t.reward, 2) : "-", fmtSpeedup(t.speedup_eager),
                          fmtSpeedup(t.speedup_compile)});
  s += "<h2>Tasks</h2>\n<details><summary>All " + std::to_string(r.tasks.size()) +
       " tasks</summary>\n<div class=\"scroll\">" + htmlTable(tasks) + "</div></details>\n";
  s += pageClose();
  return s;
}

namespace {

// Speed-up in A against B for tasks correct in both, log-log, coloured by
// what changed; the diagonal is "no change".
std::string scatterSvg(const Comparison& c) {
  Baseline b = c.a.options.primary;
  std::vector<const TaskChange*> pts;
  std::vector<double> v;
  for (const TaskChange& ch : c.tasks)
    if (ch.a && ch.b && ch.a->correct && ch.b->correct && drawable(primaryOf(*ch.a, b)) &&
        drawable(primaryOf(*ch.b, b))) {  // untimed: no point
      pts.push_back(&ch);
      v.push_back(primaryOf(*ch.a, b));
      v.push_back(primaryOf(*ch.b, b));
    }
  const double S = 360, left = 52, bottom = 40, top = 30, right = 16;
  const double W = left + S + right, H = top + S + bottom;
  LogAxis ax = LogAxis::cover(v), ay = ax;
  ax.a = left, ax.b = left + S;
  ay.a = top + S, ay.b = top;
  std::string label = "speed-up over " + std::string(baselineName(b)) + ": A against B";
  std::string s = svgOpen(W, H, label);
  s += "<text class=\"ct\" x=\"" + c1(left) + "\" y=\"17\">" + esc(label) + "</text>\n";
  for (int e = ax.lo; e <= ax.hi; ++e) {
    double x = ax.map(std::ldexp(1.0, e)), y = ay.map(std::ldexp(1.0, e));
    const char* stroke = e == 0 ? "#999" : "#e6e6e6";
    s += "<line x1=\"" + c1(x) + "\" x2=\"" + c1(x) + "\" y1=\"" + c1(top) + "\" y2=\"" + c1(top + S) +
         "\" stroke=\"" + stroke + "\"/>\n";
    s += "<line x1=\"" + c1(left) + "\" x2=\"" + c1(left + S) + "\" y1=\"" + c1(y) + "\" y2=\"" + c1(y) +
         "\" stroke=\"" + stroke + "\"/>\n";
    s += "<text x=\"" + c1(x) + "\" y=\"" + c1(top + S + 14) + "\" text-anchor=\"middle\">" + tickLabel(e) +
         "</text>\n";
    s += "<text x=\"" + c1(left - 6) + "\" y=\"" + c1(y + 4) + "\" text-anchor=\"end\">" + tickLabel(e) +
         "</text>\n";
  }
  s += "<line x1=\"" + c1(left) + "\" y1=\"" + c1(top + S) + "\" x2=\"" + c1(left + S) + "\" y2=\"" +
       c1(top) + "\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n";
  s += "<text x=\"" + c1(left + S / 2) + "\" y=\"" + c1(H - 8) +
       "\" text-anchor=\"middle\" class=\"ax\">A (x) against B (y); above the diagonal: B is faster</text>\n";
  for (const TaskChange* ch : pts) {
    double sa = primaryOf(*ch->a, b), sb = primaryOf(*ch->b, b);
    const char* color = ch->change == "faster" ? "#59a14f" : ch->change == "slower" ? "#e15759" : "#8a8a8a";
    s += "<circle cx=\"" + c1(ax.map(sa)) + "\" cy=\"" + c1(ay.map(sb)) + "\" r=\"2.8\" fill=\"" + color +
         "\" fill-opacity=\"0.7\"><title>" + esc(ch->task_id) + ": " + fmtSpeedup(sa) + " → " +
         fmtSpeedup(sb) + "</title></circle>\n";
  }
  s += "</svg>\n";
  return s;
}

// The comparison table pivoted for reading: a row per metric, a column per
// group, each cell "A -> B" over its change, coloured by direction.
std::string pivotHtml(const Table& t) {
  std::vector<std::string> groups, metrics;
  for (const auto& row : t.rows) {
    if (std::find(groups.begin(), groups.end(), row[0]) == groups.end()) groups.push_back(row[0]);
    if (std::find(metrics.begin(), metrics.end(), row[1]) == metrics.end()) metrics.push_back(row[1]);
  }
  std::string s = "<table class=\"pivot\">\n<thead><tr><th>metric</th>";
  for (const std::string& g : groups) s += "<th class=\"n\">" + esc(g) + "</th>";
  s += "</tr></thead>\n<tbody>\n";
  for (const std::string& m : metrics) {
    s += "<tr><td>" + esc(m) + "</td>";
    for (const std::string& g : groups) {
      auto it = std::find_if(t.rows.begin(), t.rows.end(),
                             [&](const auto& row) { return row[0] == g && row[1] == m; });
      if (it == t.rows.end()) {
        s += "<td class=\"n\">-</td>";
        continue;
      }
      const std::string& d = (*it)[4];
      // Higher is better for every metric here but the task count.
      const char* dir = m == "scored tasks" || d.empty() || d[0] == '0' || d == "-" ? "flat"
                        : d[0] == '+'                                             ? "up"
                                                                                  : "down";
      s += "<td class=\"n\">" + esc((*it)[2]) + " &rarr; " + esc((*it)[3]) + "<span class=\"d " + dir +
           "\">" + esc(d) + "</span></td>";
    }
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

}  // namespace

std::string renderHtml(const Comparison& c) {
  std::string s = pageOpen(c.a.options.title);
  s += "<h1>" + esc(c.a.options.title) + "</h1>\n";
  s += "<p class=\"meta\">A = " + esc(sourcesText(c.a)) + " (" + std::to_string(c.a.all.results) +
       " tasks) &middot; B = " + esc(sourcesText(c.b)) + " (" + std::to_string(c.b.all.results) +
       " tasks) &middot; " + esc(schemeText(c.a)) + " &middot; generated " + esc(nowIso8601()) + "</p>\n";
  std::vector<Warning> ws = c.a.warnings;
  for (Warning w : c.b.warnings) {
    w.what += " (B)";
    ws.push_back(std::move(w));
  }
  s += warningsHtml(ws);

  s += "<h2>What changed per task (over " + std::string(baselineName(c.a.options.primary)) +
       ")</h2>\n<div class=\"badges\">";
  for (const auto& [kind, n] : c.changes) s += "<span>" + esc(kind) + " <b>" + std::to_string(n) + "</b></span>";
  s += "</div>\n";

  s += "<h2>Run table, A &rarr; B</h2>\n<div class=\"scroll\">" + pivotHtml(compareTable(c)) + "</div>\n";

  std::vector<double> all;
  for (const auto* rep : {&c.a, &c.b})
    for (const TaskRow& t : rep->tasks)
      if (t.correct) all.push_back(primaryOf(t, c.a.options.primary));
  double pmax = pmaxFor(all, c.a.options.fast_p);
  auto curve = [&](const RunReport& r, const std::string& label, const char* color, bool dashed) {
    Curve k{label, color, true, dashed, {}, r.all.scored};
    for (const TaskRow& t : r.tasks)
      if (t.correct) k.speedups.push_back(primaryOf(t, c.a.options.primary));
    return k;
  };
  s += "<h2>Charts</h2>\n<div class=\"charts\">\n" + scatterSvg(c);
  s += fastPSvg({curve(c.a, "A", "#8a8a8a", true), curve(c.b, "B", "#4e79a7", false)}, pmax,
                c.a.options.fast_p,
                "fast_p over " + std::string(baselineName(c.a.options.primary)) + ", A and B");
  s += "</div>\n";
  s += legend({{"faster", "#59a14f"}, {"slower", "#e15759"}, {"same", "#8a8a8a"},
               {"fast_p of A (dashed)", "#8a8a8a"}, {"fast_p of B", "#4e79a7"}});

  Table changed = changedTasksTable(c);
  s += "<h2>Tasks whose outcome changed (" + std::to_string(changed.rows.size()) + ")</h2>\n";
  s += changed.rows.empty() ? "<p class=\"note\">None.</p>\n"
                            : "<div class=\"scroll\">" + htmlTable(changed) + "</div>\n";
  s += pageClose();
  return s;
}

}  // namespace kb::report
