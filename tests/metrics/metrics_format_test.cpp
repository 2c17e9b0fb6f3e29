// The Prometheus text format's numbers as prometheus-cpp writes them: bucket bounds read as they
// were written (le="0.0025", not 0.0025000000000000001) and values survive a scrape.
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

// prometheus-cpp writes values with 16 significant digits: short for every value a person reads,
// and within one unit in the last place of the stored double (0.1 + 0.2 reads back as 0.3).
BOOST_AUTO_TEST_CASE(values_read_back_as_the_double_within_its_last_digit) {
  Registry registry;
  registry.counter("a_total", "A.").inc(0.1);
  auto& sum = registry.counter("b_total", "B.");
  sum.inc(0.1);
  sum.inc(0.2);
  registry.gauge("huge", "Huge.").set(1e21);
  registry.gauge("tiny", "Tiny.").set(5e-324);
  registry.gauge("whole", "Whole.").set(1763829000);
  registry.gauge("negative", "Negative.").set(-2.5);
  registry.gauge("not_a_number", "NaN.", {}, [] { return std::numeric_limits<double>::quiet_NaN(); });
  registry.gauge("infinite", "Infinite.", {}, [] { return -std::numeric_limits<double>::infinity(); });
  const std::string page = registry.render();
  BOOST_TEST(contains(page, "a_total 0.1"), page);
  BOOST_TEST(contains(page, "b_total 0.3"), page);
  BOOST_TEST(contains(page, "huge 1e+21"), page);
  BOOST_TEST(contains(page, "whole 1763829000"), page);
  BOOST_TEST(contains(page, "negative -2.5"), page);
  BOOST_TEST(contains(page, "infinite -Inf"), page);
  // The value text after each name, read back as Prometheus does (strtod accepts "Nan" as NaN).
  auto value_of = [&](const std::string& name) {
    auto at = page.find("\n" + name + " ");
    BOOST_REQUIRE_MESSAGE(at != std::string::npos, name << "\n" << page);
    return std::strtod(page.c_str() + at + name.size() + 2, nullptr);
  };
  BOOST_TEST(std::isnan(value_of("not_a_number")));
  BOOST_TEST(std::abs(value_of("b_total") - (0.1 + 0.2)) <= 1e-15);
  BOOST_TEST(value_of("tiny") == 5e-324);
  BOOST_TEST(value_of("huge") == 1e21);
}

BOOST_AUTO_TEST_SUITE_END()
