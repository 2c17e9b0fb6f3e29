// The metrics registry's own bound, and the API's label folding that keeps client text out of
// label values: whatever arrives, the series count and the rendered page stay small.
#include <boost/test/unit_test.hpp>

#include "common/api_app/metric_labels.hpp"
#include "common/metrics/registry.hpp"

using rr::metrics::Registry;
using rr::metrics::RegistryLimits;

namespace {

rr::http::Request at(std::string path) {
  rr::http::Request request;
  request.method = "GET";
  request.path = std::move(path);
  return request;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(metrics_bound)

BOOST_AUTO_TEST_CASE(series_beyond_the_bound_fold_into_one_overflow_series_per_family) {
  Registry registry(RegistryLimits{.max_series = 10, .max_labels_length = 512});
  for (int i = 0; i < 1000; ++i) {
    registry.counter("requests_total", "Requests.", {{"method", "m" + std::to_string(i)}}).inc();
  }
  BOOST_TEST(registry.series() == 10u);
  BOOST_TEST(registry.overflowed() == 990u);
  std::string page = registry.render();
  BOOST_TEST(page.find("requests_total{overflow=\"true\"} 990\n") != std::string::npos, page);
  BOOST_TEST(page.find("rocket_rides_metrics_series_overflow_total 990\n") != std::string::npos, page);
  BOOST_TEST(page.size() < 2048u, page.size());
  // A series made before the bound keeps counting on its own.
  registry.counter("requests_total", "Requests.", {{"method", "m3"}}).inc();
  BOOST_TEST(registry.render().find("requests_total{method=\"m3\"} 2\n") != std::string::npos);
  // The bound is shared by every family and kind; overflow keeps the family's total right.
  registry.histogram("duration_seconds", "Duration.", {{"route", "/x"}}).observe(0.5);
  registry.gauge("depth", "Depth.", {{"queue", "q"}}).set(3);
  registry.gauge("read", "Read on scrape.", {{"k", "v"}}, [] { return 1.0; });
  page = registry.render();
  BOOST_TEST(page.find("duration_seconds_count{overflow=\"true\"} 1\n") != std::string::npos, page);
  BOOST_TEST(page.find("depth{overflow=\"true\"} 3\n") != std::string::npos, page);
  // A read-on-scrape gauge cannot be folded: it is dropped and counted.
  BOOST_TEST(page.find("read{") == std::string::npos, page);
  BOOST_TEST(registry.overflowed() == 993u);
  BOOST_TEST(registry.series() == 10u);
}

BOOST_AUTO_TEST_CASE(an_oversized_label_text_folds_into_the_overflow_series) {
  Registry registry(RegistryLimits{.max_series = 100, .max_labels_length = 64});
  registry.counter("c_total", "C.", {{"method", std::string(4000, 'X')}}).inc();
  registry.counter("c_total", "C.", {{"method", "GET"}}).inc();
  std::string page = registry.render();
  BOOST_TEST(page.find(std::string(65, 'X')) == std::string::npos);
  BOOST_TEST(page.find("c_total{overflow=\"true\"} 1\n") != std::string::npos, page);
  BOOST_TEST(page.find("c_total{method=\"GET\"} 1\n") != std::string::npos, page);
  BOOST_TEST(registry.series() == 1u);
}

BOOST_AUTO_TEST_CASE(the_default_limits_hold_a_flood_of_distinct_labels) {
  Registry registry;
  for (int i = 0; i < 20000; ++i) registry.counter("c_total", "C.", {{"id", std::to_string(i)}}).inc();
  BOOST_TEST(registry.series() == RegistryLimits{}.max_series);
  BOOST_TEST(registry.render().size() < 256u * 1024u);
}

BOOST_AUTO_TEST_CASE(methods_outside_the_standard_set_are_other) {
  for (const char* method : {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"}) {
    BOOST_TEST(rr::api::method_label(method) == method);
  }
  for (const std::string& method :
       {std::string("get"), std::string("PROPFIND"), std::string(4000, 'A'), std::string("POST "), std::string()}) {
    BOOST_TEST(rr::api::method_label(method) == "other");
  }
}

BOOST_AUTO_TEST_CASE(paths_outside_the_routes_are_unmatched) {
  BOOST_TEST(rr::api::route_label(at("/rides")) == "/rides");
  BOOST_TEST(rr::api::route_label(at("/rides/123")) == "/rides/{id}");
  BOOST_TEST(rr::api::route_label(at("/rides/" + std::string(4000, '9'))) == "/rides/{id}");
  BOOST_TEST(rr::api::route_label(at("/healthz")) == "/healthz");
  BOOST_TEST(rr::api::route_label(at("/readyz")) == "/readyz");
  // The rider pages' routes are templates too: a ride page's id never becomes a label.
  BOOST_TEST(rr::api::route_label(at("/")) == "/");
  BOOST_TEST(rr::api::route_label(at("/my/rides/" + std::string(4000, '9'))) == "/my/rides/{id}");
  // /metrics is not served on the public port: a path like any other.
  for (const char* path : {"/metrics", "/x", "/ridesX", "/admin", ""}) {
    BOOST_TEST(rr::api::route_label(at(path)) == "unmatched", path);
  }
}

BOOST_AUTO_TEST_SUITE_END()
