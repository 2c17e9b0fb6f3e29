// Concurrent new rides share their first phase's round trip and commit, over
// real sockets against the real API process: the POSTs that arrive while one request's first
// phase is in flight go to PostgreSQL as one call of rides_create_with_keys, and each gets the
// answer it would have got alone: its own key, ride, audit record and charge; a key named twice
// in the batch is created once and its second request is answered as a key in flight (or, if its
// twin finished meanwhile, with the same 201); a finished key in the batch is replayed. A table
// lock the test holds keeps the first request's phase in flight until the others have queued (the
// API's rocket_rides_db_coalesced_queued says when), so nothing here depends on timing.
#include <boost/test/unit_test.hpp>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.hpp"
#include "support/api_process.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/text.hpp"

using namespace rr::test;
using namespace std::chrono_literals;
namespace http = rr::http;

namespace {

constexpr const char* kCreateBatch = "rides_create_with_keys";

std::string series(const std::string& name) { return name + "{function=\"" + kCreateBatch + "\"}"; }

std::string ride_id_of(const std::string& body) {
  std::smatch match;
  if (!std::regex_search(body, match, std::regex("\"id\":([0-9]+)"))) return "";
  return match[1];
}

struct CoalescedRequestsFixture : ApiFixture {
  std::uint16_t metrics_port = 0;

  CoalescedRequestsFixture() {
    metrics_port = free_port();
    start_api(settings());
    BOOST_REQUIRE_MESSAGE(wait_for_port(metrics_port, 5s), "no metrics port: " << api->output());
  }

  // Twelve requests of one rider at once: above the default per-rider bound of 8. One call of a
  // kind in flight, so that every other request queues behind the first one held at its lock
  // (two in flight are coalesced_calls_test's).
  EnvChanges settings(const std::string& max_batch = "64") const {
    return {{"METRICS_PORT", std::to_string(metrics_port)},
            {"API_MAX_IN_FLIGHT_PER_USER", "64"},
            {"DATABASE_MAX_BATCH", max_batch},
            {"DATABASE_BATCHES_IN_FLIGHT", "1"}};
  }

  std::string waiting_for_audit_lock() {
    return db.scalar("SELECT count(*) FROM pg_locks WHERE relation = 'audit_records'::regclass AND NOT granted");
  }

  std::string metrics() const {
    return http::send({"GET", "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics", {}, "", 10s}).body;
  }

  std::future<http::ClientResponse> post_async(const std::string& key) {
    return std::async(std::launch::async,
                      [this, key] { return api->post_ride(token, key, RideFixture::kDefaultForm, 30s); });
  }

  // Polls `condition` for up to 20 s.
  void wait_for(const std::string& what, const std::function<bool()>& condition) {
    for (int round = 0; round < 2000; ++round) {
      if (condition()) return;
      std::this_thread::sleep_for(10ms);
    }
    BOOST_FAIL(
        "never happened: " + what + "\n" + metrics() + "\n" +
        db.scalar("SELECT string_agg(state || ' ' || coalesce(wait_event, '-') || ' ' || left(query, 120), E'\\n') "
                  "FROM pg_stat_activity WHERE backend_type = 'client backend'") +
        "\n" + api->output());
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(coalesced_requests, CoalescedRequestsFixture)

BOOST_AUTO_TEST_CASE(new_rides_queued_behind_one_in_flight_are_created_in_one_batch_each_with_its_own_answer) {
  // A key finished before this process started (so not answered from its memory): its request
  // in the batch is a replay of the stored 201.
  auto earlier = api->post_ride(token, "coalesce-finished-key-00000000001");
  BOOST_REQUIRE_EQUAL(earlier.status, 201);
  start_api(settings());
  BOOST_REQUIRE(wait_for_port(metrics_port, 5s));
  // A request whose token this process has not seen runs on a worker thread, alone (its lookup
  // blocks); the ones after it, on request fibers, coalesce.
  BOOST_REQUIRE_EQUAL(api->post_ride(token, "coalesce-warm-up-key-000000000001").status, 201);

  // The first request's phase waits for this lock (its audit record's insert).
  pqxx::connection holder(db.direct_url());  // beside PgBouncer's few server sessions
  auto hold = std::make_unique<pqxx::work>(holder);
  hold->exec("LOCK TABLE audit_records IN SHARE MODE");
  auto first = post_async("coalesce-first-key-00000000000001");
  wait_for("the first request waiting for the lock", [&] { return waiting_for_audit_lock() == "1"; });

  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i) keys.push_back("coalesce-new-key-00000000000000" + std::to_string(i));
  keys.push_back("coalesce-twice-key-00000000000001");
  keys.push_back("coalesce-twice-key-00000000000001");
  keys.push_back("coalesce-finished-key-00000000001");
  std::vector<std::future<http::ClientResponse>> queued;
  for (const auto& key : keys) queued.push_back(post_async(key));
  wait_for("every other request queued behind the first",
           [&] { return metric_sample(metrics(), series("rocket_rides_db_coalesced_queued")) == double(keys.size()); });
  hold->commit();

  auto first_answer = first.get();
  BOOST_TEST(first_answer.status == 201);
  std::vector<http::ClientResponse> answers;
  for (auto& one : queued) answers.push_back(one.get());
  for (int i = 0; i < 8; ++i) {
    BOOST_TEST(answers[i].status == 201, keys[i] << ": " << answers[i].body);
    BOOST_TEST(answers[i].header("Idempotency-Key") == keys[i]);
  }
  // The key named twice: created once; the other request found it locked (409) or, if its twin
  // finished first, replayed the same 201.
  const auto& twin_a = answers[8];
  const auto& twin_b = answers[9];
  BOOST_TEST((twin_a.status == 201 || twin_b.status == 201));
  for (const auto* loser : {&twin_a, &twin_b}) {
    if (loser->status != 201) BOOST_TEST(loser->status == 409, loser->body);
  }
  if (twin_a.status == 201 && twin_b.status == 201) BOOST_TEST(twin_a.body == twin_b.body);
  BOOST_TEST(answers[10].status == 201);
  BOOST_TEST(answers[10].body == earlier.body);  // the stored answer, byte for byte

  // One batch carried the eleven queued requests; each key has one ride, one audit record and
  // one charge.
  auto page = metrics();
  BOOST_TEST(metric_sample(page, series("rocket_rides_db_coalesced_batches_total")) == 1);
  BOOST_TEST(metric_sample(page, series("rocket_rides_db_coalesced_calls_total")) == double(keys.size()));
  BOOST_TEST(metric_sample(page, series("rocket_rides_db_coalesced_queued")) == 0);
  // 8 new, twice, first, finished, warm-up
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "12");
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides") == "12");
  BOOST_TEST(db.scalar("SELECT count(*) FROM audit_records WHERE action = 'create_ride'") == "12");
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys WHERE recovery_point = 'finished' "
                       "AND response_code = 201") == "12");
  BOOST_TEST(stripe.charges() == 12);
  // Each answer names its own ride.
  std::map<std::string, std::string> rides;
  for (int i = 0; i < 8; ++i) rides[ride_id_of(answers[i].body)] = keys[i];
  BOOST_TEST(rides.size() == 8u);
  for (const auto& [ride, key] : rides) {
    BOOST_TEST(db.scalar("SELECT k.idempotency_key FROM rides r JOIN idempotency_keys k ON k.id = r.idempotency_key_id "
                         "WHERE r.id = " +
                         ride) == key);
  }
}

BOOST_AUTO_TEST_CASE(a_max_batch_of_one_sends_each_request_alone) {
  start_api(settings("1"));
  BOOST_REQUIRE(wait_for_port(metrics_port, 5s));
  BOOST_REQUIRE_EQUAL(api->post_ride(token, "alone-warm-up-key-0000000000000001").status, 201);
  pqxx::connection holder(db.direct_url());  // beside PgBouncer's few server sessions
  auto hold = std::make_unique<pqxx::work>(holder);
  hold->exec("LOCK TABLE audit_records IN SHARE MODE");
  std::vector<std::future<http::ClientResponse>> answers;
  for (int i = 0; i < 2; ++i) answers.push_back(post_async("alone-key-00000000000000000000000" + std::to_string(i)));
  // Each request's own call reaches PostgreSQL: two sessions wait for the lock at once (two: a
  // transaction-pooling PgBouncer's suite has three server sessions, one for the test's queries).
  wait_for("two requests each waiting for the lock in its own session",
           [&] { return waiting_for_audit_lock() == "2"; });
  hold->commit();
  for (auto& answer : answers) BOOST_TEST(answer.get().status == 201);
  BOOST_TEST(metrics().find("rocket_rides_db_coalesced_batches_total{") == std::string::npos);
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides") == "3");
  BOOST_TEST(stripe.charges() == 3);
}

BOOST_AUTO_TEST_SUITE_END()
