// The real rocket-rides-api over real HTTP against hostile clients: random methods
// leave /metrics and the process's memory bounded, /metrics lives on METRICS_PORT only, and the
// Idempotency-Key and body rules hold on the wire, not only inside App.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <random>

#include "common/http/client.hpp"
#include "support/api_process.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using namespace rr::test;
namespace http = rr::http;

namespace {

// Resident memory of a process in KiB, from /proc/<pid>/status.
long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
}

struct HardeningFixture : ApiFixture {
  std::uint16_t metrics_port = 0;
  http::Client client;

  // The wire tests of parsing rules do not read metrics: they need only the public port.
  void start_api(bool wait_for_metrics_port = true) {
    metrics_port = free_port();
    // Under AddressSanitizer freed memory waits in a quarantine (256 MB by default) before reuse,
    // which would make RSS grow with any allocation churn; without it RSS measures what is kept.
    const char* asan = std::getenv("ASAN_OPTIONS");
    std::string asan_options = std::string(asan ? asan : "") + (asan && *asan ? ":" : "") + "quarantine_size_mb=0";
    ApiFixture::start_api({{"METRICS_PORT", std::to_string(metrics_port)},
                           {"API_IO_THREADS", "2"},
                           {"API_WORKERS", "4"},
                           {"ASAN_OPTIONS", asan_options}});
    if (wait_for_metrics_port) {
      BOOST_REQUIRE_MESSAGE(wait_for_port(metrics_port, std::chrono::seconds(5)), "no metrics port: " << api->output());
    }
  }

  http::ClientResponse call(const std::string& method, std::uint16_t at_port, const std::string& target,
                            std::vector<std::pair<std::string, std::string>> headers = {}, std::string body = "") {
    return client.send({method, "http://127.0.0.1:" + std::to_string(at_port) + target, std::move(headers),
                        std::move(body), std::chrono::seconds(10)});
  }

  http::ClientResponse post(std::vector<std::pair<std::string, std::string>> key_headers,
                            const std::string& body = RideFixture::kDefaultForm,
                            const std::string& content_type = "application/x-www-form-urlencoded") {
    std::vector<std::pair<std::string, std::string>> headers = {{"Authorization", "Bearer " + token},
                                                                {"Content-Type", content_type}};
    for (auto& header : key_headers) headers.push_back(std::move(header));
    return call("POST", port, "/rides", std::move(headers), body);
  }

  std::string metrics() {
    auto page = call("GET", metrics_port, "/metrics");
    BOOST_REQUIRE(page.status == 200);
    return page.body;
  }

  // Random methods of 200 to 4,000 token characters, as a hostile client may send.
  void send_random_methods(int count, std::mt19937& rng) {
    std::uniform_int_distribution<int> length(200, 4000), letter('A', 'Z');
    for (int i = 0; i < count; ++i) {
      std::string method(length(rng), 'A');
      for (char& c : method) c = static_cast<char>(letter(rng));
      auto r = call(method, port, i % 2 ? "/rides" : "/nowhere");
      BOOST_REQUIRE_MESSAGE(r.status >= 400 && r.status < 500, "status " << r.status);
    }
  }
};

bool is_error_json(const http::ClientResponse& r) {
  return r.header("Content-Type") == "application/json" && r.body.find("\"error\":{") != std::string::npos &&
         r.body.find("\"type\":\"invalid_request_error\"") != std::string::npos &&
         r.body.find("\"message\":") != std::string::npos;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(api_hardening, HardeningFixture)

BOOST_AUTO_TEST_CASE(metrics_are_served_on_metrics_port_and_404_on_the_public_port) {
  start_api();
  BOOST_REQUIRE(post({{"Idempotency-Key", new_key()}}).status == 201);
  for (const char* method : {"GET", "HEAD", "POST"}) {
    auto r = call(method, port, "/metrics");
    BOOST_TEST(r.status == 404, method);
    BOOST_TEST(r.body.find("rocket_rides_") == std::string::npos);
  }
  BOOST_TEST(is_error_json(call("GET", port, "/metrics")));
  auto page = call("GET", metrics_port, "/metrics");
  BOOST_TEST(page.status == 200);
  BOOST_TEST(page.header("Content-Type").starts_with("text/plain"));
  BOOST_TEST(page.body.find("rocket_rides_http_requests_total{method=\"POST\",route=\"/rides\",status=\"201\"} 1\n") !=
                 std::string::npos,
             page.body);
  // Labels come in name order (prometheus-cpp sorts them). The API's own gauges come with it,
  // and the public port's 404s count as unmatched.
  BOOST_TEST(page.body.find("rocket_rides_db_pool_connections{state=\"max\"}") != std::string::npos);
  BOOST_TEST(page.body.find("method=\"GET\",route=\"unmatched\",status=\"404\"") != std::string::npos);
  BOOST_TEST(call("GET", metrics_port, "/healthz").status == 200);
}

BOOST_AUTO_TEST_CASE(random_methods_leave_metrics_and_memory_bounded) {
  start_api();
  std::mt19937 rng(17);
  // Warm up thread caches, allocator size classes and connection buffers first, so RSS afterwards
  // measures what the requests leave behind. Measured on the ASan build: 1 MiB of growth after
  // this warm-up, against 12 MiB when each method was a series of its own.
  send_random_methods(1000, rng);
  long before = rss_kib(api->pid());
  auto page_before = metrics();
  send_random_methods(2000, rng);
  long after = rss_kib(api->pid());
  auto page_after = metrics();
  BOOST_TEST_MESSAGE("RSS " << before << " KiB -> " << after << " KiB; /metrics " << page_before.size() << " -> "
                            << page_after.size() << " bytes");
  BOOST_TEST(page_after.size() < 64u * 1024u, page_after.size());
  BOOST_TEST(page_after.size() < page_before.size() + 1024u);
  BOOST_TEST(after - before < 6 * 1024, "RSS grew by " << (after - before) << " KiB");
  BOOST_TEST(page_after.find("method=\"other\"") != std::string::npos);
  BOOST_TEST(page_after.find("AAAA") == std::string::npos);
  BOOST_TEST(page_after.find("rocket_rides_metrics_series_overflow_total 0\n") != std::string::npos);
  BOOST_TEST(post({{"Idempotency-Key", new_key()}}).status == 201);  // still serving
}

BOOST_AUTO_TEST_CASE(blank_and_listed_idempotency_keys_are_400_on_the_wire) {
  start_api(false);
  auto key = new_key(), other = new_key();
  const std::vector<std::vector<std::pair<std::string, std::string>>> cases = {
      {{"Idempotency-Key", ""}},
      {{"Idempotency-Key", std::string(30, ' ')}},
      {{"Idempotency-Key", "\"\""}},
      {{"Idempotency-Key", "\"" + std::string(30, ' ') + "\""}},
      {{"Idempotency-Key", "\"\t  \t\""}},
      {{"Idempotency-Key", key + "," + other}},
      {{"Idempotency-Key", key + ", " + other}},
      {{"Idempotency-Key", "\"" + key + "\", \"" + other + "\""}},
      {{"Idempotency-Key", key}, {"Idempotency-Key", other}},
  };
  for (const auto& headers : cases) {
    auto r = post(headers);
    BOOST_TEST(r.status == 400, headers.front().second << ": " << r.body);
    BOOST_TEST(is_error_json(r), r.body);
  }
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides") == "0");
}

BOOST_AUTO_TEST_CASE(body_and_query_rules_hold_on_the_wire) {
  start_api(false);
  const std::string json = "application/json";
  auto bad_utf8 = post({{"Idempotency-Key", new_key()}},
                       "{\"origin_lat\":1,\"origin_lon\":2,\"target_lat\":3,\"target_lon\":4,\"note\":\"\xff\"}", json);
  BOOST_TEST(bad_utf8.status == 400, bad_utf8.body);
  auto duplicate = post({{"Idempotency-Key", new_key()}},
                        "{\"origin_lat\":1,\"origin_lat\":2,\"origin_lon\":2,\"target_lat\":3,\"target_lon\":4}", json);
  BOOST_TEST(duplicate.status == 400, duplicate.body);
  auto tiny = post({{"Idempotency-Key", new_key()}},
                   "{\"origin_lat\":1e-400,\"origin_lon\":2,\"target_lat\":3,\"target_lon\":4}", json);
  BOOST_TEST(tiny.status == 422, tiny.body);
  auto repeated_limit = call("GET", port, "/rides?limit=1&limit=2", {{"Authorization", "Bearer " + token}});
  BOOST_TEST(repeated_limit.status == 400, repeated_limit.body);
  auto byte_order_mark =
      post({{"Idempotency-Key", new_key()}},
           "\xEF\xBB\xBF{\"origin_lat\":1,\"origin_lon\":2,\"target_lat\":3,\"target_lon\":4}", json);
  BOOST_TEST(byte_order_mark.status == 400, byte_order_mark.body);
  auto nul = post({{"Idempotency-Key", new_key()}},
                  "{\"origin_lat\":1,\"origin_lon\":2,\"target_lat\":3,\"target_lon\":4,\"note\":\"\\u0000\"}", json);
  BOOST_TEST(nul.status == 400, nul.body);
  // A raw NUL after the object: RapidJSON stops at it, every proxy and log reads on.
  using namespace std::string_literals;
  auto raw_nul = post({{"Idempotency-Key", new_key()}},
                      "{\"origin_lat\":1,\"origin_lon\":2,\"target_lat\":3,\"target_lon\":4}\0{{{not json"s, json);
  BOOST_TEST(raw_nul.status == 400, raw_nul.body);
  for (const auto& r : {bad_utf8, duplicate, repeated_limit, byte_order_mark, nul, raw_nul}) {
    BOOST_TEST(is_error_json(r), r.body);
  }
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
}

BOOST_AUTO_TEST_SUITE_END()
