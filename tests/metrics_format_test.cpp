// The Prometheus text format's numbers: the shortest text that reads back as the same double, so
// bucket bounds read as they were written (le="0.0025") and every value survives a scrape exactly.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "common/metrics/registry.hpp"

using rr::metrics::Registry;

namespace {

bool contains(const std::string& page, const std::string& line) { return page.find(line + "\n") != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(metrics_format)

BOOST_AUTO_TEST_CASE(bucket_bounds_are_written_as_the_decimals_they_were_given) {
  Registry registry;
  registry.histogram("latency_seconds", "Latency.").observe(0.003);
  const std::string page = registry.render();
  for (const char* bound :
       {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}) {
    BOOST_TEST(page.find(std::string("latency_seconds_bucket{le=\"") + bound + "\"}") != std::string::npos,
               bound << "\n"
                     << page);
  }
  BOOST_TEST(page.find("0.0025000000000000001") == std::string::npos, page);
  BOOST_TEST(contains(page, "latency_seconds_bucket{le=\"0.0025\"} 0"), page);
  BOOST_TEST(contains(page, "latency_seconds_bucket{le=\"0.005\"} 1"), page);
  BOOST_TEST(contains(page, "latency_seconds_sum 0.003"), page);
}

BOOST_AUTO_TEST_CASE(values_are_the_shortest_text_that_reads_back_as_the_same_double) {
  Registry registry;
  registry.counter("a_total", "A.").inc(0.1);
  auto& sum = registry.counter("b_total", "B.");
  sum.inc(0.1);
  sum.inc(0.2);  // 0.30000000000000004: the exact double, not a rounding of it
  registry.gauge("huge", "Huge.").set(1e21);
  registry.gauge("tiny", "Tiny.").set(5e-324);
  registry.gauge("whole", "Whole.").set(1763829000);
  registry.gauge("negative", "Negative.").set(-2.5);
  registry.gauge("not_a_number", "NaN.", {}, [] { return std::numeric_limits<double>::quiet_NaN(); });
  registry.gauge("infinite", "Infinite.", {}, [] { return -std::numeric_limits<double>::infinity(); });
  const std::string page = registry.render();
  BOOST_TEST(contains(page, "a_total 0.1"), page);
  BOOST_TEST(contains(page, "b_total 0.30000000000000004"), page);
  BOOST_TEST(contains(page, "huge 1e+21"), page);
  BOOST_TEST(contains(page, "tiny 5e-324"), page);
  BOOST_TEST(contains(page, "whole 1763829000"), page);
  BOOST_TEST(contains(page, "negative -2.5"), page);
  BOOST_TEST(contains(page, "not_a_number NaN"), page);
  BOOST_TEST(contains(page, "infinite -Inf"), page);
  // Each finite value reads back as exactly the double that was stored.
  BOOST_TEST(std::strtod("0.30000000000000004", nullptr) == 0.1 + 0.2);
  BOOST_TEST(std::strtod("5e-324", nullptr) == 5e-324);
}

BOOST_AUTO_TEST_SUITE_END()
