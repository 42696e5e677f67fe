// The server's counters and histograms in Prometheus' text format
// (exposition format 0.0.4): what GET /metrics answers. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kb::serve {

class Metrics {
 public:
  // Adds to a counter; `labels` as Prometheus writes them, e.g. status="ok".
  void count(const std::string& name, const std::string& labels = "", double by = 1);
  // Records one observation of a histogram (seconds).
  void observe(const std::string& name, const std::string& labels, double value);
  // Declares a metric's help text and type ("counter", "gauge", "histogram").
  void describe(const std::string& name, const std::string& type, const std::string& help);

  // The text: every declared metric with its samples, then `gauges`
  // (name{labels} -> value, computed by the caller at scrape time).
  std::string render(const std::vector<std::pair<std::string, double>>& gauges) const;

  // The buckets every histogram uses (seconds).
  static const std::vector<double>& buckets();

 private:
  struct Histogram {
    std::vector<unsigned long long> counts;  // per bucket, not cumulative
    unsigned long long total = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::string>> meta_;  // name -> (type, help)
  std::map<std::string, std::map<std::string, double>> counters_;
  std::map<std::string, std::map<std::string, Histogram>> histograms_;
};

}  // namespace kb::serve
