// Prometheus metrics: counters, gauges and histograms with labels, rendered in the text
// exposition format. One process-wide registry, as Prometheus client libraries have.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace rr::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Renders the _bucket/_sum/_count lines for one label set.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

class Registry {
 public:
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const Labels& labels = {},
                       std::vector<double> bounds = default_latency_buckets());
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // A gauge read when scraped (pool sizes, timestamps).
  void gauge(const std::string& name, const std::string& help, const Labels& labels, std::function<double()> read);
  std::string render() const;

  static std::vector<double> default_latency_buckets();

 private:
  struct Family {
    std::string help;
    std::string type;
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
    std::map<std::string, std::function<double()>> gauges;
    std::map<std::string, std::unique_ptr<Gauge>> set_gauges;
  };
  Family& family(const std::string& name, const std::string& help, const char* type);

  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
};

Registry& default_registry();
// {a="1",b="2"} with values escaped; "" for no labels.
std::string format_labels(const Labels& labels);

}  // namespace rr::metrics
