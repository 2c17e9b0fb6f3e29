// POST /rides/{id}/cancel: every row of the contract over real HTTP against the real API process,
// PostgreSQL and the stand-in provider; then, in process, a crash after each recovery point, a
// provider timeout, sixteen concurrent cancels and an abandoned cancel the completer finishes. The
// invariant throughout: a ride is refunded at most once, and only its own charge. Last, the
// parameters' reader alone (read_cancel_params), with the bytes hostile clients send.
#include <rapidjson/document.h>

#include <boost/test/unit_test.hpp>
#include <future>
#include <set>
#include <thread>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/auth/users.hpp"
#include "common/http/client.hpp"
#include "common/maintenance/completer.hpp"
#include "support/api_process.hpp"
#include "support/ride_fixture.hpp"

using namespace rr::test;
namespace http = rr::http;
namespace idem = rr::idempotency;

namespace {

// The ride id, cancelled_at and stripe_refund_id of a {"ride":{...}} body.
struct RideFields {
  std::string id, charge, cancelled_at, refund;
};
RideFields ride_fields(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  BOOST_REQUIRE_MESSAGE(doc.IsObject() && doc.HasMember("ride"), body);
  const auto& ride = doc["ride"];
  auto text = [&](const char* name) -> std::string {
    if (!ride.HasMember(name)) return "(absent)";
    if (ride[name].IsNull()) return "null";
    if (ride[name].IsInt64()) return std::to_string(ride[name].GetInt64());
    return ride[name].GetString();
  };
  return {text("id"), text("stripe_charge_id"), text("cancelled_at"), text("stripe_refund_id")};
}

struct CancelHttpFixture : ApiFixture {
  CancelHttpFixture() { start_api(); }

  std::string charged_ride(const std::string& bearer = "") {
    auto created = api->post_ride(bearer.empty() ? token : bearer, new_key());
    BOOST_REQUIRE_MESSAGE(created.status == 201, created.body);
    rapidjson::Document doc;
    doc.Parse(created.body.c_str());
    return std::to_string(doc["ride"]["id"].GetInt64());
  }

  http::ClientResponse cancel(const std::string& ride_id, const std::string& key, const std::string& body = "",
                              const std::string& content_type = "application/x-www-form-urlencoded") {
    return http::send({"POST",
                       api->url("/rides/" + ride_id + "/cancel"),
                       {{"Authorization", "Bearer " + token}, {"Idempotency-Key", key}, {"Content-Type", content_type}},
                       body,
                       std::chrono::seconds(10)});
  }

  std::string scalar(const std::string& sql) { return db.scalar(sql); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(cancel_over_http, CancelHttpFixture)

BOOST_AUTO_TEST_CASE(a_charged_ride_is_refunded_marked_cancelled_and_the_answer_replays_byte_for_byte) {
  auto ride = charged_ride();
  BOOST_TEST(ride_fields(api->get("/rides/" + ride, token).body).cancelled_at == "null");
  BOOST_TEST(ride_fields(api->get("/rides/" + ride, token).body).refund == "null");
  auto key = new_key();
  auto cancelled = cancel(ride, key, "reason=changed+my+mind");
  BOOST_TEST_REQUIRE(cancelled.status == 200, cancelled.body);
  auto fields = ride_fields(cancelled.body);
  BOOST_TEST(fields.id == ride);
  BOOST_TEST(fields.refund.starts_with("re_"), fields.refund);
  BOOST_TEST(fields.cancelled_at.ends_with("Z"), fields.cancelled_at);
  BOOST_TEST(cancelled.header("Idempotency-Key") == key);
  BOOST_TEST(stripe.refunds() == 1);
  // The refund is of this ride's own charge, made with the ride's refund key.
  BOOST_TEST(scalar("SELECT stripe_refund_id || ' ' || cancel_reason FROM rides WHERE id = " + ride) ==
             fields.refund + " changed my mind");
  BOOST_TEST(scalar("SELECT count(*) FROM staged_jobs WHERE job_name = 'send_cancellation_receipt' AND "
                    "job_args->0->>'ride_id' = '" +
                    ride + "' AND job_args->0->>'refund_id' = '" + fields.refund + "'") == "1");
  auto replay = cancel(ride, key, "reason=changed+my+mind");
  BOOST_TEST(replay.status == 200);
  BOOST_TEST(replay.body == cancelled.body);
  BOOST_TEST(replay.header("Idempotent-Replayed") == "true");
  // GET shows the same ride, and the list too.
  BOOST_TEST(api->get("/rides/" + ride, token).body == cancelled.body);
  BOOST_TEST(api->get("/rides", token).body.find(fields.refund) != std::string::npos);
  BOOST_TEST(stripe.refunds() == 1);
}

BOOST_AUTO_TEST_CASE(an_already_cancelled_ride_is_answered_as_it_is_without_a_second_refund) {
  auto ride = charged_ride();
  auto first = cancel(ride, new_key());
  BOOST_TEST_REQUIRE(first.status == 200, first.body);
  auto second = cancel(ride, new_key(), "{\"reason\":\"again\"}", "application/json");
  BOOST_TEST(second.status == 200, second.body);
  BOOST_TEST(second.body == first.body);
  BOOST_TEST(stripe.refunds() == 1);
  BOOST_TEST(scalar("SELECT count(*) FROM staged_jobs WHERE job_name = 'send_cancellation_receipt'") == "1");
}

BOOST_AUTO_TEST_CASE(no_such_ride_or_another_users_is_404) {
  auto bob_token = rr::auth::create_user(db.conn(), "bob@example.com", "cus_bob").token;
  auto bobs_ride = charged_ride(bob_token);
  BOOST_TEST(cancel(bobs_ride, new_key()).status == 404);
  BOOST_TEST(cancel("999999", new_key()).status == 404);
  BOOST_TEST(cancel("abc", new_key()).status == 404);
  BOOST_TEST(stripe.refunds() == 0);
  BOOST_TEST(scalar("SELECT count(*) FROM rides WHERE cancelled_at IS NOT NULL") == "0");
}

BOOST_AUTO_TEST_CASE(a_ride_whose_own_request_has_not_finished_is_409_with_retry_after_and_stores_nothing) {
  {
    pqxx::work tx(db.conn());
    auto key_id = tx.exec_params(
                        "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
                        "recovery_point, user_id, locked_at) SELECT $1, 'POST', '{}', '/rides', 'ride_created', id, "
                        "NULL FROM users WHERE email = 'alice@example.com' RETURNING id",
                        new_key())[0][0]
                      .as<std::int64_t>();
    tx.exec_params(
        "INSERT INTO rides (id, idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id) "
        "SELECT 4242, $1, 1, 2, 3, 4, user_id FROM idempotency_keys WHERE id = $1",
        key_id);
    tx.commit();
  }
  auto key = new_key();
  auto r = cancel("4242", key);
  BOOST_TEST(r.status == 409, r.body);
  BOOST_TEST(!r.header("Retry-After").empty());
  BOOST_TEST(r.header("Idempotency-Key") == key);
  BOOST_TEST(scalar("SELECT count(*) FROM idempotency_keys WHERE request_path LIKE '%/cancel'") == "0");
  BOOST_TEST(stripe.refunds() == 0);
}

BOOST_AUTO_TEST_CASE(a_provider_outage_is_503_with_retry_after_not_stored_and_a_retry_resumes) {
  auto ride = charged_ride();
  stripe.configure("{\"failure_rate\":1}");
  auto key = new_key();
  auto down = cancel(ride, key);
  BOOST_TEST(down.status == 503, down.body);
  BOOST_TEST(!down.header("Retry-After").empty());
  BOOST_TEST(scalar("SELECT recovery_point || ' ' || (response_code IS NULL) || ' ' || (locked_at IS NULL) FROM "
                    "idempotency_keys WHERE request_path LIKE '%/cancel'") == "refund_pending true true");
  stripe.configure("{\"failure_rate\":0}");
  auto retry = cancel(ride, key);
  BOOST_TEST(retry.status == 200, retry.body);
  BOOST_TEST(retry.header("Idempotent-Replayed").empty());
  BOOST_TEST(stripe.refunds() == 1);
}

BOOST_AUTO_TEST_CASE(the_same_key_with_another_ride_or_reason_is_422_and_bad_reasons_are_422) {
  auto ride = charged_ride();
  auto other = charged_ride();
  auto key = new_key();
  BOOST_TEST_REQUIRE(cancel(ride, key, "reason=a").status == 200);
  BOOST_TEST(cancel(ride, key, "reason=b").status == 422);
  BOOST_TEST(cancel(other, key, "reason=a").status == 422);
  BOOST_TEST(api->post_ride(token, key).status == 422);  // same key, another path
  BOOST_TEST(cancel(other, new_key(), "reason=" + std::string(501, 'x')).status == 422);
  BOOST_TEST(cancel(other, new_key(), "reason=tab%09inside").status == 422);
  BOOST_TEST(cancel(other, new_key(), "reason=a&reason=b").status == 422);
  BOOST_TEST(cancel(other, new_key(), "reason=x", "text/plain").status == 415);
  BOOST_TEST(stripe.refunds() == 1);
}

// A reason is a string or nothing. A number was once taken for its text (the strict reader kept
// numbers as strings), answered 200 and refunded; and a NUL ended the body for RapidJSON.
BOOST_AUTO_TEST_CASE(a_number_for_a_reason_is_422_and_a_nul_in_the_body_is_400_and_neither_refunds) {
  using namespace std::string_literals;
  auto ride = charged_ride();
  for (const std::string body :
       {"{\"reason\":5}", "{\"reason\":-1.5e300}", "{\"reason\":true}", "{\"reason\":[\"a\"]}", "{\"reason\":{}}"}) {
    auto r = cancel(ride, new_key(), body, "application/json");
    BOOST_TEST(r.status == 422, body << " -> " << r.body);
    BOOST_TEST(r.body.find("Parameter reason must be a string.") != std::string::npos, r.body);
  }
  auto nul = cancel(ride, new_key(), "{\"reason\":\"a\"}\0{{{not json"s, "application/json");
  BOOST_TEST(nul.status == 400, nul.body);
  BOOST_TEST(nul.body.find("NUL") != std::string::npos, nul.body);
  BOOST_TEST(scalar("SELECT count(*) FROM idempotency_keys WHERE request_path LIKE '%/cancel'") == "0");
  BOOST_TEST(scalar("SELECT cancelled_at IS NULL FROM rides WHERE id = " + ride) == "t");
  BOOST_TEST(stripe.refunds() == 0);
  // The same words as a string are a reason.
  BOOST_TEST(cancel(ride, new_key(), "{\"reason\":\"5\"}", "application/json").status == 200);
  BOOST_TEST(scalar("SELECT cancel_reason FROM rides WHERE id = " + ride) == "5");
  BOOST_TEST(stripe.refunds() == 1);
}

BOOST_AUTO_TEST_CASE(the_cancel_route_answers_405_to_other_methods) {
  auto r = api->get("/rides/1/cancel", token);
  BOOST_TEST(r.status == 405);
  BOOST_TEST(r.header("Allow") == "POST");
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// An in-process App (RideFixture), for crash injection and the completer.
std::string charged_ride(RideFixture& f) {
  auto created = f.post_ride(new_key());
  BOOST_REQUIRE_MESSAGE(created.status == 201, created.body);
  rapidjson::Document doc;
  doc.Parse(created.body.c_str());
  return std::to_string(doc["ride"]["id"].GetInt64());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cancel_workflow)

BOOST_AUTO_TEST_CASE(a_crash_after_each_recovery_point_then_a_retry_refunds_exactly_once) {
  for (const std::string crash_at : {"refund_pending", "finished"}) {
    bool armed = false;
    idem::RunnerOptions options;
    options.after_commit = [&](const std::string& point) {
      if (armed && point == crash_at) {
        armed = false;
        throw idem::SimulatedCrash{"process died after " + point};
      }
    };
    RideFixture f(5, options);
    auto ride = charged_ride(f);
    armed = true;
    auto key = new_key();
    BOOST_CHECK_THROW(f.cancel_ride(ride, key), idem::SimulatedCrash);
    if (crash_at != "finished") BOOST_TEST(f.cancel_ride(ride, key).status == 409);  // the dead lock
    expire_locks(f.db);
    auto retry = f.cancel_ride(ride, key);
    BOOST_TEST(retry.status == 200, crash_at << ": " << retry.body);
    BOOST_TEST(ride_fields(retry.body).refund.starts_with("re_"), crash_at);
    BOOST_TEST(f.stripe.refunds() == 1, crash_at);
    BOOST_TEST(f.db.scalar("SELECT count(*) FROM staged_jobs WHERE job_name = 'send_cancellation_receipt'") == "1",
               crash_at);
  }
}

BOOST_AUTO_TEST_CASE(a_provider_timeout_then_a_retry_makes_one_refund) {
  RideFixture f(1);  // STRIPE_TIMEOUT 1 s
  auto ride = charged_ride(f);
  f.stripe.configure("{\"latency_ms\":1500}");
  auto key = new_key();
  auto timed_out = f.cancel_ride(ride, key);
  BOOST_TEST(timed_out.status == 503, timed_out.body);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // the provider finishes the refund meanwhile
  f.stripe.configure("{\"latency_ms\":0}");
  auto retry = f.cancel_ride(ride, key);
  BOOST_TEST(retry.status == 200, retry.body);
  BOOST_TEST(f.stripe.refunds() == 1);
}

BOOST_AUTO_TEST_CASE(sixteen_simultaneous_cancels_with_sixteen_keys_make_one_refund) {
  RideFixture f;
  auto ride = charged_ride(f);
  f.stripe.configure("{\"latency_ms\":200}");  // keeps the refunds in flight together
  std::vector<std::future<std::string>> cancels;
  for (int i = 0; i < 16; ++i) {
    cancels.push_back(std::async(std::launch::async, [&f, ride] {
      auto key = new_key();
      for (int attempt = 0; attempt < 50; ++attempt) {
        auto r = f.cancel_ride(ride, key);
        if (r.status == 200) return ride_fields(r.body).refund;
        BOOST_TEST((r.status == 409 || r.status == 503), r.status << " " << r.body);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      return std::string("gave up");
    }));
  }
  std::set<std::string> refunds;
  for (auto& c : cancels) refunds.insert(c.get());
  BOOST_TEST(refunds.size() == 1u);
  BOOST_TEST(refunds.begin()->starts_with("re_"), *refunds.begin());
  BOOST_TEST(f.stripe.refunds() == 1);
  BOOST_TEST(f.db.scalar("SELECT count(*) FROM staged_jobs WHERE job_name = 'send_cancellation_receipt'") == "1");
}

BOOST_AUTO_TEST_CASE(a_cancel_abandoned_after_the_refund_is_finished_by_the_completer) {
  RideFixture f(1);  // STRIPE_TIMEOUT 1 s
  auto ride = charged_ride(f);
  // The refund is made, and its answer comes too late: the client gets a 503 and never comes back.
  f.stripe.configure("{\"latency_ms\":1500}");
  auto lost = f.cancel_ride(ride, new_key());
  BOOST_TEST(lost.status == 503, lost.body);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  f.stripe.configure("{\"latency_ms\":0}");
  BOOST_TEST(f.stripe.refunds() == 1);
  BOOST_TEST(f.db.scalar("SELECT cancelled_at IS NULL FROM rides WHERE id = " + ride) == "t");
  f.db.scalar(
      "WITH aged AS (UPDATE idempotency_keys SET created_at = now() - interval '1 hour', last_run_at = now() - "
      "interval '1 hour' RETURNING 1) SELECT count(*) FROM aged");

  rr::payments::StripeClient stripe(f.settings(5).payment);
  rr::maintenance::Completer completer(f.app->pool(), stripe, {});
  auto report = completer.run_once();
  BOOST_TEST(report.completed == 1);
  BOOST_TEST(f.db.scalar("SELECT recovery_point || ' ' || response_code FROM idempotency_keys WHERE request_path "
                         "LIKE '%/cancel'") == "finished 200");
  BOOST_TEST(f.db.scalar("SELECT (cancelled_at IS NOT NULL) || ' ' || (stripe_refund_id LIKE 're_%') FROM rides "
                         "WHERE id = " +
                         ride) == "true true");
  BOOST_TEST(f.stripe.refunds() == 1);
  BOOST_TEST(f.db.scalar("SELECT count(*) FROM staged_jobs WHERE job_name = 'send_cancellation_receipt'") == "1");
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// read_cancel_params for ride 7 with this body: the canonical parameters, or "<status> <message>".
std::string cancel_params_of(const std::string& body, const std::string& content_type = "application/json") {
  http::Request request;
  request.method = "POST";
  request.target = request.path = "/rides/7/cancel";
  request.headers = {{"Content-Type", content_type}};
  request.body = body;
  try {
    return rr::api::read_cancel_params(request, {"7"});
  } catch (const rr::api::ApiError& error) {
    return std::to_string(error.status) + " " + error.what();
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cancel_params)

BOOST_AUTO_TEST_CASE(a_reason_that_is_not_a_string_or_null_is_422) {
  const std::string refused = "422 Parameter reason must be a string.";
  for (std::string body : {"{\"reason\":5}", "{\"reason\":-1.5e300}", "{\"reason\":0}", "{\"reason\":-0.0}",
                           "{\"reason\":1E2}", "{\"reason\":true}", "{\"reason\":false}", "{\"reason\":[]}",
                           "{\"reason\":[\"a\"]}", "{\"reason\":{}}", "{\"reason\":{\"text\":\"a\"}}"}) {
    BOOST_TEST(cancel_params_of(body) == refused, body);
  }
  // A number too large for a double is refused as the ride's coordinates are.
  BOOST_TEST(cancel_params_of("{\"reason\":1e400}").starts_with("422 "));
}

BOOST_AUTO_TEST_CASE(a_string_null_or_absent_reason_is_read_as_such) {
  BOOST_TEST(cancel_params_of("{\"reason\":\"5\"}") == "{\"reason\":\"5\",\"ride_id\":7}");
  BOOST_TEST(cancel_params_of("{\"reason\":\"-1.5e300\"}") == "{\"reason\":\"-1.5e300\",\"ride_id\":7}");
  BOOST_TEST(cancel_params_of("{\"reason\":null}") == "{\"reason\":null,\"ride_id\":7}");
  BOOST_TEST(cancel_params_of("{}") == "{\"reason\":null,\"ride_id\":7}");
  // Other members are not read, whatever they are.
  BOOST_TEST(cancel_params_of("{\"note\":5,\"reason\":\"x\"}") == "{\"reason\":\"x\",\"ride_id\":7}");
  BOOST_TEST(cancel_params_of("reason=5", "application/x-www-form-urlencoded") == "{\"reason\":\"5\",\"ride_id\":7}");
}

BOOST_AUTO_TEST_CASE(a_nul_byte_anywhere_in_the_json_body_is_400) {
  using namespace std::string_literals;
  for (std::string body : {"{\"reason\":\"a\"}\0{{{not json"s, "{\"reason\":\"a\"}\0"s, "{\"reason\":5}\0"s,
                           "{}\0{\"reason\":\"a\"}"s, "{\"reason\":\"a\0\"}"s, "\0{}"s}) {
    BOOST_TEST(cancel_params_of(body).starts_with("400 "), cancel_params_of(body));
  }
}

BOOST_AUTO_TEST_SUITE_END()
