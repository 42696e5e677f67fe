#include "rl/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "rl/episode.h"

namespace fs = std::filesystem;

namespace kb::rl {

namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// One chart: points (x, y) with NaN gaps, file boundaries as dashed lines.
std::string chart(const std::string& name, const std::vector<std::pair<double, double>>& pts,
                  const std::vector<std::pair<double, std::string>>& starts, double x_max) {
  const double W = 460, H = 220, L = 56, R = 10, T = 24, B = 28;
  double lo = INFINITY, hi = -INFINITY;
  for (auto& [x, y] : pts)
    if (std::isfinite(y)) lo = std::min(lo, y), hi = std::max(hi, y);
  if (!std::isfinite(lo)) return "";
  if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
  auto px = [&](double x) { return L + (W - L - R) * (x_max > 0 ? x / x_max : 0.5); };
  auto py = [&](double y) { return T + (H - T - B) * (1 - (y - lo) / (hi - lo)); };
  std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='" + num(W) + "' height='" + num(H) + "'>";
  s += "<text x='" + num(L) + "' y='16' font-size='13' font-family='sans-serif'>" + escape(name) + "</text>";
  s += "<rect x='" + num(L) + "' y='" + num(T) + "' width='" + num(W - L - R) + "' height='" + num(H - T - B) +
       "' fill='none' stroke='#999'/>";
  for (double f : {0.0, 0.5, 1.0}) {
    const double y = lo + f * (hi - lo);
    s += "<text x='" + num(L - 4) + "' y='" + num(py(y) + 4) +
         "' font-size='10' text-anchor='end' font-family='sans-serif'>" + num(y) + "</text>";
  }
  s += "<text x='" + num(W - R) + "' y='" + num(H - 8) +
       "' font-size='10' text-anchor='end' font-family='sans-serif'>step " + num(x_max) + "</text>";
  for (auto& [x, label] : starts)
    s += "<line x1='" + num(px(x)) + "' x2='" + num(px(x)) + "' y1='" + num(T) + "' y2='" + num(H - B) +
         "' stroke='#bbb' stroke-dasharray='3,3'><title>" + escape(label) + "</title></line>";
  std::string path;
  bool pen = false;
  for (auto& [x, y] : pts) {
    if (!std::isfinite(y)) {
      pen = false;
      continue;
    }
    path += (pen ? " L" : " M") + num(px(x)) + "," + num(py(y));
    pen = true;
  }
  s += "<path d='" + path + "' fill='none' stroke='#1f77b4' stroke-width='1.5'/>";
  if (pts.size() <= 60)
    for (auto& [x, y] : pts)
      if (std::isfinite(y))
        s += "<circle cx='" + num(px(x)) + "' cy='" + num(py(y)) + "' r='2' fill='#1f77b4'><title>" + num(x) +
             ": " + num(y) + "</title></circle>";
  return s + "</svg>";
}

}  // namespace

std::string metricsHtml(const std::vector<fs::path>& runs, const std::string& title) {
  std::vector<std::string> order;  // fields in first-seen order
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  std::vector<std::pair<double, std::string>> starts;
  double x = 0;
  size_t records = 0;
  for (const fs::path& p : runs) {
    std::vector<Json> rows = readJsonl(p);
    starts.emplace_back(x, p.string());
    for (const Json& r : rows) {
      ++x;
      ++records;
      for (auto& [k, v] : r.items()) {
        if (k == "step" || k == "steps" || k == "epoch") continue;
        if (!v.is_number() && !v.is_null()) continue;
        if (!series.count(k)) order.push_back(k);
        series[k].emplace_back(x, v.is_number() ? v.get<double>() : NAN);
      }
    }
  }
  if (records == 0) throw UsageError("no metric records in the given files");
  std::string html = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + escape(title) +
                     "</title><style>body{font-family:sans-serif;margin:16px}div.c{display:inline-block;margin:6px}"
                     "</style></head><body><h1>" + escape(title) + "</h1><p>" + std::to_string(records) +
                     " steps from " + std::to_string(runs.size()) +
                     " file(s); dashed lines mark where each file starts (hover for its name).</p>";
  for (const std::string& k : order) {
    const std::string c = chart(k, series[k], starts, x);
    if (!c.empty()) html += "<div class='c'>" + c + "</div>";
  }
  return html + "</body></html>\n";
}

}  // namespace kb::rl
