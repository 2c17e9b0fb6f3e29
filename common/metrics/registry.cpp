// The suite's bounded registry over prometheus-cpp's: the library keeps the series and writes the
// text format; this file decides which series may exist.
#include "common/metrics/registry.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <set>
#include <stdexcept>

namespace rr::metrics {
namespace {

// One per family at most, outside max_series: it exists only once the bound was hit.
const std::string kOverflowKey = "{overflow=\"true\"}";

prometheus::Labels library_labels(const Labels& labels, const std::string& key) {
  if (key == kOverflowKey) return {{"overflow", "true"}};
  return {labels.begin(), labels.end()};
}

}  // namespace

void Counter::inc(double amount) { series_->Increment(amount); }
double Counter::value() const { return series_->Value(); }
void Gauge::set(double value) { series_->Set(value); }
double Gauge::value() const { return series_->Value(); }
void Histogram::observe(double value) { series_->Observe(value); }

// A metric family: prometheus-cpp's, plus our handles keyed by their rendered labels (the
// handles are what callers hold; their addresses stay put in the maps).
struct Registry::Family {
  std::string type;
  prometheus::Family<prometheus::Counter>* counters = nullptr;
  prometheus::Family<prometheus::Gauge>* gauges = nullptr;
  prometheus::Family<prometheus::Histogram>* histograms = nullptr;
  std::set<std::string> keys;  // every series of the family, overflow included
  std::map<std::string, std::unique_ptr<Counter>> counter_handles;
  std::map<std::string, std::unique_ptr<Gauge>> gauge_handles;
  std::map<std::string, std::unique_ptr<Histogram>> histogram_handles;
  // Read-on-scrape gauges: set from their reading just before each render.
  std::map<std::string, std::pair<prometheus::Gauge*, std::function<double()>>> reads;
};

Registry::Registry(RegistryLimits limits) : limits_(limits), registry_(std::make_shared<prometheus::Registry>()) {
  // Registered with the library directly, outside the bounds: the count of refused series must
  // not need a series of its own.
  overflowed_series_ = &prometheus::BuildCounter()
                            .Name("rocket_rides_metrics_series_overflow_total")
                            .Help("Metric series refused by the registry's bounds and folded into an overflow series.")
                            .Register(*registry_)
                            .Add({});
}

Registry::~Registry() = default;

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
  auto& slot = families_[name];
  if (slot) {
    if (slot->type != type) throw std::logic_error("metric " + name + " registered with two types");
    return *slot;
  }
  auto created = std::make_unique<Family>();
  created->type = type;
  const std::string kind = type;
  if (kind == "counter") {
    created->counters = &prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
  } else if (kind == "gauge") {
    created->gauges = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  } else {
    created->histograms = &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
  }
  slot = std::move(created);
  return *slot;
}

std::string Registry::series_key(const Family& family, const Labels& labels) {
  std::string key = format_labels(labels);
  if (family.keys.contains(key)) return key;
  if (key.size() <= limits_.max_labels_length && series_ < limits_.max_series) {
    ++series_;
    return key;
  }
  ++overflowed_;
  overflowed_series_->Increment();
  return kOverflowKey;
}

Counter& Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& fam = family(name, help, "counter");
  std::string key = series_key(fam, labels);
  auto& slot = fam.counter_handles[key];
  if (!slot) {
    slot = std::make_unique<Counter>(fam.counters->Add(library_labels(labels, key)));
    fam.keys.insert(key);
  }
  return *slot;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help, const Labels& labels,
                               std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  auto& fam = family(name, help, "histogram");
  std::string key = series_key(fam, labels);
  auto& slot = fam.histogram_handles[key];
  if (!slot) {
    slot = std::make_unique<Histogram>(fam.histograms->Add(library_labels(labels, key), std::move(bounds)));
    fam.keys.insert(key);
  }
  return *slot;
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mutex_);
  auto& fam = family(name, help, "gauge");
  std::string key = series_key(fam, labels);
  auto& slot = fam.gauge_handles[key];
  if (!slot) {
    slot = std::make_unique<Gauge>(fam.gauges->Add(library_labels(labels, key)));
    fam.keys.insert(key);
  }
  return *slot;
}

void Registry::gauge(const std::string& name, const std::string& help, const Labels& labels,
                     std::function<double()> read) {
  std::lock_guard lock(mutex_);
  auto& fam = family(name, help, "gauge");
  std::string key = series_key(fam, labels);
  // Two readings cannot be folded into one: a refused read-on-scrape gauge is dropped (and
  // counted), and never replaces one already there.
  if (key == kOverflowKey) return;
  auto& reading = fam.reads[key];
  if (!reading.first) {
    reading.first = &fam.gauges->Add(library_labels(labels, key));
    fam.keys.insert(key);
  }
  reading.second = std::move(read);
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
  for (const auto& [name, fam] : families_) {
    for (const auto& [key, reading] : fam->reads) reading.first->Set(reading.second());
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

std::vector<double> Registry::default_latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

Registry& default_registry() {
  static Registry registry;
  return registry;
}

}  // namespace rr::metrics
