// Prometheus metrics: counters, gauges and histograms with labels, kept and rendered in the text
// exposition format by prometheus-cpp (Debian's prometheus-cpp-dev, its core library). One
// process-wide registry, as Prometheus client libraries have.
//
// The registry bounds its own memory whatever its callers pass: at most RegistryLimits::max_series
// labelled series in all, each label text at most max_labels_length bytes. A series that would
// break either bound is not created; its family's single overflow series (labels
// {overflow="true"}) takes its updates instead, so a family's total stays right, and
// rocket_rides_metrics_series_overflow_total counts every refused series.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace rr::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The metric types are prometheus-cpp's (the series, their storage and the text format are the
// library's); these handles keep the suite's small vocabulary and the registry's bounds in front.
class Counter {
 public:
  explicit Counter(prometheus::Counter& series) : series_(&series) {}
  void inc(double amount = 1);
  double value() const;

 private:
  prometheus::Counter* series_;
};

class Gauge {
 public:
  explicit Gauge(prometheus::Gauge& series) : series_(&series) {}
  void set(double value);
  double value() const;

 private:
  prometheus::Gauge* series_;
};

class Histogram {
 public:
  explicit Histogram(prometheus::Histogram& series) : series_(&series) {}
  void observe(double value);

 private:
  prometheus::Histogram* series_;
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
  explicit Registry(RegistryLimits limits = {});
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const Labels& labels = {},
                       std::vector<double> bounds = default_latency_buckets());
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // A gauge read when scraped (pool sizes, timestamps).
  void gauge(const std::string& name, const std::string& help, const Labels& labels, std::function<double()> read);
  // The Prometheus text exposition format (prometheus-cpp's TextSerializer).
  std::string render() const;
  // Labelled series created so far, overflow series not included (never above max_series).
  std::size_t series() const;
  // Series refused by the bounds and folded into an overflow series (or, for read-on-scrape
  // gauges, dropped).
  std::uint64_t overflowed() const;

  static std::vector<double> default_latency_buckets();

 private:
  struct Family;
  Family& family(const std::string& name, const std::string& help, const char* type);
  // The key under which `labels` are kept in `family`, or the overflow key when a new series
  // would break the bounds. Called under mutex_.
  std::string series_key(const Family& family, const Labels& labels);

  RegistryLimits limits_;
  mutable std::mutex mutex_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::map<std::string, std::unique_ptr<Family>> families_;
  std::size_t series_ = 0;
  std::uint64_t overflowed_ = 0;
  prometheus::Counter* overflowed_series_ = nullptr;
};

Registry& default_registry();
// {a="1",b="2"} with values escaped; "" for no labels. The registry's bound on a series' labels
// is measured on this text.
std::string format_labels(const Labels& labels);

}  // namespace rr::metrics
