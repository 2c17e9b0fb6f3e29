// Exactly-once under failure: resuming from every recovery point, crashes after each phase,
// provider outages and timeouts, concurrent duplicates and lock takeovers.
#include <boost/test/unit_test.hpp>
#include <future>
#include <set>
#include <thread>

#include "common/idempotency/key_acquisition.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_params.hpp"
#include "support/ride_fixture.hpp"

using rr::test::expire_locks;
using rr::test::new_key;
using rr::test::response_header;
using rr::test::RideFixture;
namespace idem = rr::idempotency;

namespace {

const rr::rides::RideParams kParams{37.7749, -122.4194, 37.8044, -122.2712};

// What finishing the charged key `key` wrote, with the ids that differ between keys left out: the
// key, its ride, the ride's audit record, the ledger's charge and the staged receipt.
std::string finished_rows(rr::test::TestDatabase& db, const std::string& key) {
  return db.scalar(
      "SELECT concat_ws(' | ', k.recovery_point, k.response_code, k.response_body IS NULL, k.response_renderer, "
      "k.lock_token IS NULL, r.origin_lat::float8 || ',' || r.origin_lon::float8 || ',' || r.target_lat::float8 || "
      "',' || r.target_lon::float8, r.stripe_charge_id = c.stripe_charge_id, c.amount, c.currency, "
      "c.user_id = k.user_id, "
      "(SELECT string_agg(a.action || ':' || a.resource_type || ':' || (a.data = k.request_params) || ':' || "
      "host(a.origin_ip), ',') FROM audit_records a WHERE a.resource_id = r.id AND a.user_id = k.user_id), "
      "(SELECT string_agg(j.job_name || ':' || (j.job_args = jsonb_build_array(jsonb_build_object('amount', "
      "c.amount, 'currency', c.currency, 'user_id', k.user_id, 'ride_id', r.id))), ',') FROM staged_jobs j "
      "WHERE j.job_args->0->>'ride_id' = r.id::text), "
      "(SELECT count(*) FROM provider_charges p WHERE p.ride_id = r.id)) "
      "FROM idempotency_keys k JOIN rides r ON r.idempotency_key_id = k.id JOIN provider_charges c ON c.ride_id = "
      "r.id WHERE k.idempotency_key = " +
      db.conn().quote(key));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ride_workflow)

BOOST_AUTO_TEST_CASE(a_crash_after_each_recovery_point_then_a_retry_charges_exactly_once) {
  for (const std::string crash_at : {"ride_created", "finished"}) {
    bool crash_armed = true;
    idem::RunnerOptions options;
    options.after_commit = [&](const std::string& point) {
      if (crash_armed && point == crash_at) {
        crash_armed = false;
        throw idem::SimulatedCrash{"process died after " + point};
      }
    };
    RideFixture f(5, options);
    auto key = new_key();
    BOOST_CHECK_THROW(f.post_ride(key), idem::SimulatedCrash);
    // A dead process leaves its lock behind; a retry before expiry is told to wait.
    if (crash_at != "finished") BOOST_TEST(f.post_ride(key).status == 409);
    expire_locks(f.db);
    auto retry = f.post_ride(key);
    BOOST_TEST(retry.status == 201, crash_at << ": " << retry.body);
    BOOST_TEST(f.count("rides") == "1", crash_at);
    BOOST_TEST(f.count("audit_records") == "1", crash_at);
    BOOST_TEST(f.count("staged_jobs") == "1", crash_at);
    BOOST_TEST(f.stripe.charges() == 1, crash_at);
  }
}

BOOST_AUTO_TEST_CASE(a_key_resumes_from_ride_created_without_a_second_ride) {
  RideFixture f;
  auto key = new_key();
  {
    pqxx::work tx(f.db.conn());
    auto id = tx.exec_params(
                    "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
                    "recovery_point, user_id, locked_at) VALUES ($1, 'POST', $2::jsonb, '/rides', 'ride_created', $3, "
                    "NULL) RETURNING id",
                    key, rr::rides::to_json(kParams), f.user_id)[0][0]
                  .as<long>();
    tx.exec_params(
        "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id) VALUES ($1, "
        "37.7749, -122.4194, 37.8044, -122.2712, $2)",
        id, f.user_id);
    tx.commit();
  }
  auto r = f.post_ride(key);
  BOOST_TEST(r.status == 201, r.body);
  BOOST_TEST(f.count("rides") == "1");
  BOOST_TEST(f.count("audit_records") == "0");  // the phase that writes it was not repeated
  BOOST_TEST(f.stripe.charges() == 1);
}

// A key this run created and a key resumed after its process died are finished by the same call:
// the same rows, down to the 201 stored compactly (NULL, rendered back by renderer 1).
BOOST_AUTO_TEST_CASE(a_new_key_and_a_resumed_key_finish_with_the_same_rows) {
  bool crash_armed = false;
  idem::RunnerOptions options;
  options.after_commit = [&](const std::string& point) {
    if (crash_armed && point == "ride_created") {
      crash_armed = false;
      throw idem::SimulatedCrash{"process died after ride_created"};
    }
  };
  RideFixture f(5, options);
  auto created_key = new_key();
  auto created = f.post_ride(created_key);
  BOOST_TEST_REQUIRE(created.status == 201, created.body);
  auto resumed_key = new_key();
  crash_armed = true;
  BOOST_CHECK_THROW(f.post_ride(resumed_key), idem::SimulatedCrash);
  expire_locks(f.db);
  auto resumed = f.post_ride(resumed_key);
  BOOST_TEST_REQUIRE(resumed.status == 201, resumed.body);

  const std::string expected =
      "finished | 201 | t | 1 | t | 37.7749,-122.4194,37.8044,-122.2712 | t | 2000 | usd | t | "
      "create_ride:ride:true:127.0.0.1 | send_ride_receipt:true | 1";
  BOOST_TEST(finished_rows(f.db, created_key) == expected);
  BOOST_TEST(finished_rows(f.db, resumed_key) == expected);
  BOOST_TEST(f.count("staged_jobs") == "2");
  BOOST_TEST(f.stripe.charges() == 2);
  // Each replays the answer it gave, byte for byte.
  BOOST_TEST(f.post_ride(created_key).body == created.body);
  BOOST_TEST(f.post_ride(resumed_key).body == resumed.body);
}

BOOST_AUTO_TEST_CASE(a_key_resumes_from_charge_created_without_charging_again) {
  RideFixture f;
  auto key = new_key();
  {
    pqxx::work tx(f.db.conn());
    auto id = tx.exec_params(
                    "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
                    "recovery_point, user_id, locked_at) VALUES ($1, 'POST', $2::jsonb, '/rides', 'charge_created', "
                    "$3, NULL) RETURNING id",
                    key, rr::rides::to_json(kParams), f.user_id)[0][0]
                  .as<long>();
    tx.exec_params(
        "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id, "
        "stripe_charge_id) VALUES ($1, 37.7749, -122.4194, 37.8044, -122.2712, $2, 'ch_earlier')",
        id, f.user_id);
    tx.commit();
  }
  auto r = f.post_ride(key);
  BOOST_TEST(r.status == 201, r.body);
  BOOST_TEST(r.body.find("ch_earlier") != std::string::npos);
  BOOST_TEST(f.count("staged_jobs") == "1");
  BOOST_TEST(f.stripe.charges() == 0);
}

BOOST_AUTO_TEST_CASE(a_stale_lock_is_taken_over_and_the_request_completes) {
  RideFixture f;
  auto key = new_key();
  {
    pqxx::work tx(f.db.conn());
    tx.exec_params(
        "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
        "recovery_point, user_id, locked_at, lock_token) VALUES ($1, 'POST', $2::jsonb, '/rides', 'started', $3, "
        "now() - interval '2 hours', gen_random_uuid())",
        key, rr::rides::to_json(kParams), f.user_id);
    tx.commit();
  }
  BOOST_TEST(f.post_ride(key).status == 201);
  BOOST_TEST(f.stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(provider_outage_is_503_unlocks_the_key_and_a_retry_charges_once) {
  RideFixture f;
  f.stripe.configure("{\"failure_rate\":1}");
  auto key = new_key();
  auto r = f.post_ride(key);
  BOOST_TEST(r.status == 503, r.body);
  BOOST_TEST(response_header(r, "Retry-After").has_value());
  BOOST_TEST(f.db.scalar("SELECT recovery_point || ' ' || (locked_at IS NULL) || ' ' || (response_code IS NULL) "
                         "FROM idempotency_keys") == "ride_created true true");
  f.stripe.configure("{\"failure_rate\":0}");
  auto retry = f.post_ride(key);
  BOOST_TEST(retry.status == 201, retry.body);
  BOOST_TEST(!response_header(retry, "Idempotent-Replayed").has_value());
  BOOST_TEST(f.count("rides") == "1");
  BOOST_TEST(f.stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(provider_timeout_then_retry_makes_one_charge) {
  RideFixture f(/*stripe_timeout_seconds=*/0.3);
  f.stripe.configure("{\"latency_ms\":800}");
  auto key = new_key();
  auto r = f.post_ride(key);
  BOOST_TEST(r.status == 503, r.body);
  // The provider recorded the charge after our timeout; the retry reuses the payment key.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  f.stripe.configure("{\"latency_ms\":0}");
  auto retry = f.post_ride(key);
  BOOST_TEST(retry.status == 201, retry.body);
  BOOST_TEST(f.stripe.charges() == 1);
  BOOST_TEST(f.count("rides") == "1");
}

BOOST_AUTO_TEST_CASE(provider_drops_the_connection_after_charging_and_the_retry_charges_once) {
  RideFixture f;
  f.stripe.configure("{\"drop_rate\":1}");
  auto key = new_key();
  BOOST_TEST(f.post_ride(key).status == 503);
  f.stripe.configure("{\"drop_rate\":0}");
  auto retry = f.post_ride(key);
  BOOST_TEST(retry.status == 201, retry.body);
  BOOST_TEST(f.stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(sixteen_simultaneous_requests_with_one_key_make_one_ride_and_one_charge) {
  RideFixture f;
  f.stripe.configure("{\"latency_ms\":100}");
  auto key = new_key();
  std::vector<std::future<rr::http::Response>> responses;
  for (int i = 0; i < 16; ++i) {
    responses.push_back(std::async(std::launch::async, [&] { return f.post_ride(key); }));
  }
  int created = 0, conflicts = 0;
  std::set<std::string> bodies;
  for (auto& future : responses) {
    auto r = future.get();
    if (r.status == 201) {
      ++created;
      bodies.insert(r.body);
    } else if (r.status == 409) {
      ++conflicts;
      BOOST_TEST(response_header(r, "Retry-After").has_value());
    } else {
      BOOST_FAIL("unexpected status " << r.status << ": " << r.body);
    }
  }
  BOOST_TEST(created >= 1);
  BOOST_TEST(created + conflicts == 16);
  BOOST_TEST(bodies.size() == 1u);
  BOOST_TEST(f.count("rides") == "1");
  BOOST_TEST(f.stripe.charges() == 1);
  auto after = f.post_ride(key);
  BOOST_TEST(after.status == 201);
  BOOST_TEST(after.body == *bodies.begin());
}

BOOST_AUTO_TEST_CASE(a_taken_over_lock_refuses_the_old_owners_late_commit) {
  RideFixture f;
  auto key = new_key();
  idem::KeyRequest request{f.user_id, key, "POST", "/rides", rr::rides::to_json(kParams), "127.0.0.1"};
  auto first = idem::begin_key(f.app->pool().acquire(), request, std::chrono::seconds(90));
  BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(first));
  std::get<idem::Acquired>(first).section->tx.commit();  // stored, as a request that then stalled leaves it
  auto old_owner = std::get<idem::Acquired>(first).key;
  expire_locks(f.db);
  auto second = idem::begin_key(f.app->pool().acquire(), request, std::chrono::seconds(90));
  BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(second));
  BOOST_TEST(std::get<idem::Acquired>(second).key.lock_token != old_owner.lock_token);

  // The old owner wakes up and tries to run its phase: it must stop and write nothing.
  idem::PhaseRunner runner(f.app->pool());
  rr::payments::StripeClient stripe(f.settings(5).payment);
  auto flow = rr::rides::make_ride_flow({stripe, "cus_alice"});
  auto outcome = runner.run(flow, old_owner);
  BOOST_TEST(static_cast<int>(outcome.kind) == static_cast<int>(idem::Outcome::Kind::lock_lost));
  BOOST_TEST(f.count("rides") == "0");
  BOOST_TEST(f.db.scalar("SELECT lock_token::text FROM idempotency_keys") ==
             std::get<idem::Acquired>(second).key.lock_token);

  // The new owner finishes normally.
  auto done = runner.run(flow, std::get<idem::Acquired>(second).key);
  BOOST_TEST(done.result.code == 201);
  BOOST_TEST(f.stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(concurrent_distinct_keys_never_see_a_409) {
  RideFixture f;
  std::vector<std::future<int>> statuses;
  for (int i = 0; i < 24; ++i) {
    statuses.push_back(std::async(std::launch::async, [&] { return f.post_ride(new_key()).status; }));
  }
  for (auto& s : statuses) BOOST_TEST(s.get() == 201);
  BOOST_TEST(f.count("rides") == "24");
  BOOST_TEST(f.stripe.charges() == 24);
}

BOOST_AUTO_TEST_SUITE_END()
