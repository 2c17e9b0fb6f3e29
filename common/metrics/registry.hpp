// Prometheus metrics: counters, gauges and histograms with labels, rendered in the text
// exposition format. One process-wide registry, as Prometheus client libraries have.
//
// The registry bounds its own memory whatever its callers pass: at most RegistryLimits::max_series
// labelled series in all, each label text at most max_labels_length bytes. A series that would
// break either bound is not created; its family's single overflow series (labels
// {overflow="true"}) takes its updates instead, so a family's total stays right, and
// rocket_rides_metrics_series_overflow_total counts every refused series.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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

struct RegistryLimits {
  // Generous for every label set the code builds from closed sets (the API's request counter is
  // at most routes x methods x statuses, a few hundred); small enough that a flood of distinct
  // labels costs a few megabytes at worst.
  std::size_t max_series = 4096;
  std::size_t max_labels_length = 512;  // bytes of one series' rendered {a="1",b="2"}
};

class Registry {
 public:
  explicit Registry(RegistryLimits limits = {}) : limits_(limits) {}
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const Labels& labels = {},
                       std::vector<double> bounds = default_latency_buckets());
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // A gauge read when scraped (pool sizes, timestamps).
  void gauge(const std::string& name, const std::string& help, const Labels& labels, std::function<double()> read);
  std::string render() const;
  // Labelled series created so far, overflow series not included (never above max_series).
  std::size_t series() const;
  // Series refused by the bounds and folded into an overflow series (or, for read-on-scrape
  // gauges, dropped).
  std::uint64_t overflowed() const;

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
  // The key under which `labels` are stored in a family's `series`, or the overflow key when a
  // new series would break the bounds. Called under mutex_.
  template <typename Series>
  std::string series_key(const std::map<std::string, Series>& series, const Labels& labels);

  RegistryLimits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
  std::size_t series_ = 0;
  std::uint64_t overflowed_ = 0;
};

Registry& default_registry();
// {a="1",b="2"} with values escaped; "" for no labels.
std::string format_labels(const Labels& labels);

}  // namespace rr::metrics
