// Metric storage and the Prometheus text format.
#include "common/metrics/registry.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace rr::metrics {
namespace {

// The shortest text that reads back as the same double (le="0.0025", not %.17g's
// 0.0025000000000000001): what Prometheus' own Go clients write, and the text other tools and
// people match label values against.
std::string format_number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, result.ptr};
}

std::string with_label(const std::string& labels, const std::string& extra) {
  if (labels.empty()) return "{" + extra + "}";
  return labels.substr(0, labels.size() - 1) + "," + extra + "}";
}

// One per family at most, outside max_series: it exists only once the bound was hit.
const std::string kOverflowLabels = "{overflow=\"true\"}";

}  // namespace

void Counter::inc(double amount) {
  double current = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(current, current + amount, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  std::lock_guard lock(mutex_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard lock(mutex_);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? format_number(bounds_[i]) : "+Inf";
    out += name + "_bucket" + with_label(labels, "le=\"" + le + "\"") + " " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum" + labels + " " + format_number(sum_) + "\n";
  out += name + "_count" + labels + " " + std::to_string(count_) + "\n";
}

std::string format_labels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first + "=\"";
    for (char c : labels[i].second) {
      if (c == '\\' || c == '"') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

Registry::Family& Registry::family(const std::string& name, const std::string& help, const char* type) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.help = help;
    it->second.type = type;
  } else if (it->second.type != type) {
    throw std::logic_error("metric " + name + " registered with two types");
  }
  return it->second;
}

template <typename Series>
std::string Registry::series_key(const std::map<std::string, Series>& series, const Labels& labels) {
  std::string key = format_labels(labels);
  if (series.contains(key)) return key;
  if (key.size() <= limits_.max_labels_length && series_ < limits_.max_series) {
    ++series_;
    return key;
  }
  ++overflowed_;
  return kOverflowLabels;
}

Counter& Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& counters = family(name, help, "counter").counters;
  auto& slot = counters[series_key(counters, labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help, const Labels& labels,
                               std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  auto& histograms = family(name, help, "histogram").histograms;
  auto& slot = histograms[series_key(histograms, labels)];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& gauges = family(name, help, "gauge").set_gauges;
  auto& slot = gauges[series_key(gauges, labels)];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

void Registry::gauge(const std::string& name, const std::string& help, const Labels& labels,
                     std::function<double()> read) {
  std::lock_guard lock(mutex_);
  auto& gauges = family(name, help, "gauge").gauges;
  std::string key = series_key(gauges, labels);
  // Two readings cannot be folded into one: a refused read-on-scrape gauge is dropped (and
  // counted), and never replaces one already there.
  if (key == kOverflowLabels) return;
  gauges[key] = std::move(read);
}

std::size_t Registry::series() const {
  std::lock_guard lock(mutex_);
  return series_;
}

std::uint64_t Registry::overflowed() const {
  std::lock_guard lock(mutex_);
  return overflowed_;
}

std::string Registry::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, fam] : families_) {
    out += "# HELP " + name + " " + fam.help + "\n# TYPE " + name + " " + fam.type + "\n";
    for (const auto& [labels, counter] : fam.counters)
      out += name + labels + " " + format_number(counter->value()) + "\n";
    for (const auto& [labels, histogram] : fam.histograms) histogram->render(out, name, labels);
    for (const auto& [labels, read] : fam.gauges) out += name + labels + " " + format_number(read()) + "\n";
    for (const auto& [labels, gauge] : fam.set_gauges)
      out += name + labels + " " + format_number(gauge->value()) + "\n";
  }
  // Rendered rather than registered: the count of refused series must not need a series itself.
  out +=
      "# HELP rocket_rides_metrics_series_overflow_total Metric series refused by the registry's bounds and "
      "folded into an overflow series.\n# TYPE rocket_rides_metrics_series_overflow_total counter\n"
      "rocket_rides_metrics_series_overflow_total " +
      std::to_string(overflowed_) + "\n";
  return out;
}

std::vector<double> Registry::default_latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

Registry& default_registry() {
  static Registry registry;
  return registry;
}

}  // namespace rr::metrics
