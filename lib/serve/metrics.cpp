#include "serve/metrics.h"

#include <cstdio>
#include <sstream>

namespace kb::serve {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string withLabels(const std::string& name, const std::string& labels) {
  return labels.empty() ? name : name + "{" + labels + "}";
}

std::string joinLabels(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "," + b;
}

}  // namespace

const std::vector<double>& Metrics::buckets() {
  static const std::vector<double> b = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
  return b;
}

void Metrics::describe(const std::string& name, const std::string& type, const std::string& help) {
  std::lock_guard lock(mu_);
  meta_[name] = {type, help};
}

void Metrics::count(const std::string& name, const std::string& labels, double by) {
  std::lock_guard lock(mu_);
  counters_[name][labels] += by;
}

void Metrics::observe(const std::string& name, const std::string& labels, double value) {
  std::lock_guard lock(mu_);
  Histogram& h = histograms_[name][labels];
  if (h.counts.empty()) h.counts.assign(buckets().size(), 0);
  for (size_t i = 0; i < buckets().size(); ++i)
    if (value <= buckets()[i]) {
      ++h.counts[i];
      break;
    }
  ++h.total;
  h.sum += value;
}

std::string Metrics::render(const std::vector<std::pair<std::string, double>>& gauges) const {
  std::ostringstream out;
  std::lock_guard lock(mu_);
  auto header = [&](const std::string& name) {
    auto it = meta_.find(name);
    if (it == meta_.end()) return;
    out << "# HELP " << name << " " << it->second.second << "\n# TYPE " << name << " " << it->second.first << "\n";
  };
  for (const auto& [name, samples] : counters_) {
    header(name);
    for (const auto& [labels, v] : samples) out << withLabels(name, labels) << " " << number(v) << "\n";
  }
  for (const auto& [name, series] : histograms_) {
    header(name);
    for (const auto& [labels, h] : series) {
      unsigned long long cumulative = 0;
      for (size_t i = 0; i < buckets().size(); ++i) {
        cumulative += h.counts[i];
        out << withLabels(name + "_bucket", joinLabels(labels, "le=\"" + number(buckets()[i]) + "\"")) << " "
            << cumulative << "\n";
      }
      out << withLabels(name + "_bucket", joinLabels(labels, "le=\"+Inf\"")) << " " << h.total << "\n";
      out << withLabels(name + "_sum", labels) << " " << number(h.sum) << "\n";
      out << withLabels(name + "_count", labels) << " " << h.total << "\n";
    }
  }
  std::string last;
  for (const auto& [key, v] : gauges) {
    std::string name = key.substr(0, key.find('{'));
    if (name != last) header(name);
    last = name;
    out << key << " " << number(v) << "\n";
  }
  return out.str();
}

}  // namespace kb::serve
