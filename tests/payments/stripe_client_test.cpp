// StripeClient against the real rocket-rides-stripe-mock process, one per test, and against small
// in-process servers for answers the mock never gives: each outcome the workflow relies on.
#include <rapidjson/document.h>

#include <boost/test/unit_test.hpp>
#include <memory>
#include <mutex>

#include "common/fiber/fiber.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "common/http/server.hpp"
#include "common/payments/stripe_client.hpp"
#include "support/fibers.hpp"
#include "support/polling.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using rr::payments::ChargeOutcome;
using rr::payments::ChargeRequest;
using rr::payments::RefundOutcome;
using rr::payments::RefundRequest;
using rr::payments::StripeClient;
using rr::test::millis;

namespace {

// One rocket-rides-stripe-mock on a free port, killed when the test ends.
class MockProvider {
 public:
  explicit MockProvider(rr::test::EnvChanges env = {}) : port_(rr::test::free_port()) {
    env["PORT"] = std::to_string(port_);
    if (!env.count("MOCK_SEED")) env["MOCK_SEED"] = "7";
    process_ = std::make_unique<rr::test::ChildProcess>(
        std::vector<std::string>{rr::test::binary("rocket-rides-stripe-mock")}, env);
    BOOST_REQUIRE_MESSAGE(rr::test::wait_for_port(port_, 10s), "the mock did not start: " + process_->output());
  }

  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  StripeClient client(std::chrono::milliseconds timeout = 5000ms, std::string key = "sk_test_rides") const {
    return StripeClient({base(), std::move(key), timeout});
  }

  rapidjson::Document get_json(const std::string& path) const {
    rr::http::ClientRequest request;
    request.url = base() + path;
    auto response = rr::http::send(request);
    BOOST_REQUIRE(response.status == 200);
    rapidjson::Document document;
    document.Parse(response.body.c_str());
    BOOST_REQUIRE(!document.HasParseError());
    return document;
  }

  std::int64_t stat(const char* name) const {
    auto stats = get_json("/_mock/stats");
    BOOST_REQUIRE(stats.HasMember(name));
    return stats[name].GetInt64();
  }

  void configure(const std::string& form) const {
    rr::http::ClientRequest request;
    request.method = "POST";
    request.url = base() + "/_mock/config";
    request.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
    request.body = form;
    BOOST_REQUIRE(rr::http::send(request).status == 200);
  }

 private:
  std::uint16_t port_;
  std::unique_ptr<rr::test::ChildProcess> process_;
};

ChargeRequest ride_charge(const std::string& key, const std::string& customer = "cus_rider") {
  ChargeRequest request;
  request.amount = 2000;
  request.currency = "usd";
  request.customer = customer;
  request.description = "Ride from A to B";
  request.idempotency_key = key;
  return request;
}

RefundRequest refund_of(const std::string& charge, const std::string& key) {
  RefundRequest request;
  request.charge = charge;
  request.reason = "requested_by_customer";
  request.idempotency_key = key;
  return request;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(stripe_client)

BOOST_AUTO_TEST_CASE(a_charge_on_the_mock_is_charged_with_its_id) {
  MockProvider provider;
  auto outcome = provider.client().create_charge(ride_charge("rr-key-charged"));
  BOOST_TEST((outcome.kind == ChargeOutcome::Kind::charged));
  BOOST_TEST(outcome.charge_id.starts_with("ch_"));
  BOOST_TEST(outcome.http_status == 200);
  auto charges = provider.get_json("/_mock/charges");
  BOOST_REQUIRE(charges.Size() == 1u);
  BOOST_TEST(std::string(charges[0]["id"].GetString()) == outcome.charge_id);
  BOOST_TEST(std::string(charges[0]["idempotency_key"].GetString()) == "rr-key-charged");
  BOOST_TEST(std::string(charges[0]["description"].GetString()) == "Ride from A to B");
  BOOST_TEST(charges[0]["amount"].GetInt64() == 2000);
}

BOOST_AUTO_TEST_CASE(a_key_replayed_with_other_metadata_is_key_reused_and_find_charge_finds_its_charge) {
  MockProvider provider;
  for (int i = 0; i < 3; ++i) {  // other charges of the customer, listed around the one looked for
    auto other = ride_charge("rr-key-other-" + std::to_string(i));
    other.metadata = {{"rr_idempotency_key", "client-other-" + std::to_string(i)}};
    BOOST_TEST_REQUIRE((provider.client().create_charge(other).kind == ChargeOutcome::Kind::charged));
  }
  auto first = ride_charge("rr-key-reused");
  first.metadata = {{"rr_user_id", "7"}, {"rr_ride_id", "1"}, {"rr_idempotency_key", "client-key"}};
  auto charged = provider.client().create_charge(first);
  BOOST_TEST_REQUIRE((charged.kind == ChargeOutcome::Kind::charged));
  auto again = first;  // the same request after a lost commit: another ride
  again.metadata[1].second = "2";
  auto refused = provider.client().create_charge(again);
  BOOST_TEST((refused.kind == ChargeOutcome::Kind::key_reused));
  BOOST_TEST(refused.http_status == 400);
  auto found = provider.client().find_charge("cus_rider", {{"rr_user_id", "7"}, {"rr_idempotency_key", "client-key"}});
  BOOST_TEST((found.kind == rr::payments::FoundCharge::Kind::found));
  BOOST_TEST(found.charge_id == charged.charge_id);
  BOOST_TEST(found.succeeded);
  auto absent = provider.client().find_charge("cus_rider", {{"rr_idempotency_key", "no-such-key"}});
  BOOST_TEST((absent.kind == rr::payments::FoundCharge::Kind::absent));
}

// The API charges from a request fiber; the provider call suspends it (the
// fiber's I/O thread runs the exchange) and the outcome is the same as a thread's.
BOOST_AUTO_TEST_CASE(a_charge_and_its_refund_from_a_request_fiber_are_made) {
  MockProvider provider;
  auto client = provider.client();
  ChargeOutcome charge;
  RefundOutcome refund;
  bool still_on_the_fiber = false;
  rr::testing::run_fibers({[&] {
    charge = client.create_charge(ride_charge("rr-key-fiber"));
    refund = client.create_refund(refund_of(charge.charge_id, "rr-key-fiber-refund"));
    still_on_the_fiber = rr::fiber::active();
  }});
  BOOST_TEST((charge.kind == ChargeOutcome::Kind::charged));
  BOOST_TEST(charge.charge_id.starts_with("ch_"));
  BOOST_TEST(charge.http_status == 200);
  BOOST_TEST((refund.kind == RefundOutcome::Kind::refunded));
  BOOST_TEST(still_on_the_fiber);
  BOOST_TEST(provider.stat("charges") == 1);
  auto charges = provider.get_json("/_mock/charges");
  BOOST_REQUIRE(charges.Size() == 1u);
  BOOST_TEST(std::string(charges[0]["id"].GetString()) == charge.charge_id);
  BOOST_TEST(std::string(charges[0]["idempotency_key"].GetString()) == "rr-key-fiber");
}

BOOST_AUTO_TEST_CASE(a_retry_with_the_same_key_returns_the_same_charge_and_the_mock_counts_one) {
  MockProvider provider;
  auto client = provider.client();
  auto first = client.create_charge(ride_charge("rr-key-replay"));
  auto second = client.create_charge(ride_charge("rr-key-replay"));
  BOOST_TEST((second.kind == ChargeOutcome::Kind::charged));
  BOOST_TEST(second.charge_id == first.charge_id);
  BOOST_TEST(provider.stat("charges") == 1);
  BOOST_TEST(provider.stat("replays") == 1);
}

BOOST_AUTO_TEST_CASE(a_declined_customer_is_card_declined_with_the_providers_message) {
  MockProvider provider;
  auto outcome = provider.client().create_charge(ride_charge("rr-key-declined", "cus_declined"));
  BOOST_TEST((outcome.kind == ChargeOutcome::Kind::card_declined));
  BOOST_TEST(outcome.http_status == 402);
  BOOST_TEST(outcome.message == "Your card was declined.");
  BOOST_TEST(outcome.charge_id.empty());
}

BOOST_AUTO_TEST_CASE(an_injected_500_is_unavailable_and_nothing_is_charged) {
  MockProvider provider(rr::test::EnvChanges{{"MOCK_FAILURE_RATE", "1"}});
  auto outcome = provider.client().create_charge(ride_charge("rr-key-500"));
  BOOST_TEST((outcome.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(outcome.http_status == 500);
  BOOST_TEST(!outcome.timed_out);
  BOOST_TEST(outcome.message.find("unknown error") != std::string::npos);
  BOOST_TEST(provider.stat("charges") == 0);
  BOOST_TEST(provider.stat("failures_injected") == 1);
}

BOOST_AUTO_TEST_CASE(latency_above_the_timeout_is_unavailable_and_timed_out) {
  MockProvider provider(rr::test::EnvChanges{{"MOCK_LATENCY_MS", "3000"}});
  auto started = std::chrono::steady_clock::now();
  auto outcome = provider.client(300ms).create_charge(ride_charge("rr-key-slow"));
  auto elapsed = millis(std::chrono::steady_clock::now() - started);
  BOOST_TEST((outcome.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(outcome.timed_out);
  BOOST_TEST(outcome.http_status == 0);
  BOOST_TEST(elapsed >= 300);
  BOOST_TEST(elapsed < 2000);
}

BOOST_AUTO_TEST_CASE(a_dropped_answer_is_unavailable_and_a_retry_with_the_key_gets_the_recorded_charge) {
  MockProvider provider(rr::test::EnvChanges{{"MOCK_DROP_RATE", "1"}});
  auto client = provider.client();
  auto lost = client.create_charge(ride_charge("rr-key-dropped"));
  BOOST_TEST((lost.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(lost.http_status == 0);
  BOOST_TEST(!lost.timed_out);
  // The provider did charge: that is what makes reusing the key on retry mandatory.
  auto charges = provider.get_json("/_mock/charges");
  BOOST_REQUIRE(charges.Size() == 1u);
  std::string recorded = charges[0]["id"].GetString();

  provider.configure("drop_rate=0");
  auto retried = client.create_charge(ride_charge("rr-key-dropped"));
  BOOST_TEST((retried.kind == ChargeOutcome::Kind::charged));
  BOOST_TEST(retried.charge_id == recorded);
  BOOST_TEST(provider.stat("charges") == 1);
  BOOST_TEST(provider.stat("drops_injected") == 1);
}

BOOST_AUTO_TEST_CASE(a_refused_connection_is_unavailable_without_a_status) {
  StripeClient client({"http://127.0.0.1:" + std::to_string(rr::test::free_port()), "sk_test_rides", 2000ms});
  auto outcome = client.create_charge(ride_charge("rr-key-refused"));
  BOOST_TEST((outcome.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(outcome.http_status == 0);
  BOOST_TEST(!outcome.timed_out);
  BOOST_TEST(!outcome.message.empty());
}

BOOST_AUTO_TEST_CASE(a_wrong_api_key_is_unavailable_with_401) {
  MockProvider provider(rr::test::EnvChanges{{"STRIPE_API_KEY", "sk_test_right"}});
  auto outcome = provider.client(5000ms, "sk_test_wrong").create_charge(ride_charge("rr-key-auth"));
  BOOST_TEST((outcome.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(outcome.http_status == 401);
  // Stripe's wording, naming the key by its last four characters only.
  BOOST_TEST(outcome.message == "Invalid API Key provided: sk_test_****rong");
  auto right = provider.client(5000ms, "sk_test_right").create_charge(ride_charge("rr-key-auth"));
  BOOST_TEST((right.kind == ChargeOutcome::Kind::charged));
}

BOOST_AUTO_TEST_CASE(the_charge_is_a_form_encoded_post_with_bearer_auth_and_the_idempotency_key) {
  std::mutex mutex;
  rr::http::Request seen;
  rr::http::Server server({}, [&](const rr::http::Request& request) {
    std::lock_guard lock(mutex);
    seen = request;
    rr::http::Response response;
    response.body = R"({"id":"ch_from_test","object":"charge"})";
    return response;
  });
  server.start();
  StripeClient client({"http://127.0.0.1:" + std::to_string(server.port()), "sk_test_header", 2000ms});
  auto request = ride_charge("rr-key-headers");
  request.description = "Ride & tip = 100%";
  auto outcome = client.create_charge(request);
  BOOST_TEST((outcome.kind == ChargeOutcome::Kind::charged));
  BOOST_TEST(outcome.charge_id == "ch_from_test");
  std::lock_guard lock(mutex);
  BOOST_TEST(seen.method == "POST");
  BOOST_TEST(seen.path == "/v1/charges");
  BOOST_TEST(seen.header("Authorization").value_or("") == "Bearer sk_test_header");
  BOOST_TEST(seen.header("Idempotency-Key").value_or("") == "rr-key-headers");
  BOOST_TEST(seen.header("Content-Type").value_or("") == "application/x-www-form-urlencoded");
  std::vector<std::pair<std::string, std::string>> fields;
  BOOST_REQUIRE(rr::http::form_decode(seen.body, fields));
  std::vector<std::pair<std::string, std::string>> expected = {
      {"amount", "2000"}, {"currency", "usd"}, {"customer", "cus_rider"}, {"description", "Ride & tip = 100%"}};
  BOOST_TEST((fields == expected));
}

BOOST_AUTO_TEST_CASE(a_2xx_without_a_charge_id_or_json_and_other_4xx_are_unavailable) {
  std::mutex mutex;
  rr::http::Response next;
  rr::http::Server server({}, [&](const rr::http::Request&) {
    std::lock_guard lock(mutex);
    return next;
  });
  server.start();
  StripeClient client({"http://127.0.0.1:" + std::to_string(server.port()), "sk_test_x", 2000ms});
  auto answer = [&](int status, std::string body) {
    std::lock_guard lock(mutex);
    next.status = status;
    next.body = std::move(body);
  };

  answer(200, R"({"object":"charge"})");
  auto no_id = client.create_charge(ride_charge("rr-key-odd"));
  BOOST_TEST((no_id.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(no_id.http_status == 200);

  answer(200, "<html>gateway</html>");
  auto not_json = client.create_charge(ride_charge("rr-key-odd"));
  BOOST_TEST((not_json.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(not_json.http_status == 200);

  answer(429, R"({"error":{"type":"rate_limit_error","message":"Too many requests"}})");
  auto limited = client.create_charge(ride_charge("rr-key-odd"));
  BOOST_TEST((limited.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(limited.http_status == 429);
  BOOST_TEST(limited.message == "Too many requests");

  answer(503, "upstream down");
  auto down = client.create_charge(ride_charge("rr-key-odd"));
  BOOST_TEST((down.kind == ChargeOutcome::Kind::unavailable));
  BOOST_TEST(down.http_status == 503);
  BOOST_TEST(down.message.find("503") != std::string::npos);
}

// --- refunds ---

BOOST_AUTO_TEST_CASE(a_refund_on_the_mock_is_refunded_with_its_id_and_a_retry_with_the_key_replays_it) {
  MockProvider provider;
  auto client = provider.client();
  auto charge = client.create_charge(ride_charge("rr-key-to-refund"));
  BOOST_REQUIRE((charge.kind == ChargeOutcome::Kind::charged));
  auto refund = client.create_refund(refund_of(charge.charge_id, "rr-refund-1"));
  BOOST_TEST((refund.kind == RefundOutcome::Kind::refunded));
  BOOST_TEST(refund.refund_id.starts_with("re_"));
  BOOST_TEST(refund.http_status == 200);
  auto again = client.create_refund(refund_of(charge.charge_id, "rr-refund-1"));
  BOOST_TEST((again.kind == RefundOutcome::Kind::refunded));
  BOOST_TEST(again.refund_id == refund.refund_id);
  auto refunds = provider.get_json("/_mock/refunds");
  BOOST_REQUIRE(refunds.Size() == 1u);
  BOOST_TEST(std::string(refunds[0]["charge"].GetString()) == charge.charge_id);
  BOOST_TEST(refunds[0]["amount"].GetInt64() == 2000);
  BOOST_TEST(std::string(refunds[0]["reason"].GetString()) == "requested_by_customer");
  BOOST_TEST(std::string(refunds[0]["idempotency_key"].GetString()) == "rr-refund-1");
}

BOOST_AUTO_TEST_CASE(a_refund_the_provider_will_not_make_is_refused_with_stripes_code) {
  MockProvider provider;
  auto client = provider.client();
  auto charge = client.create_charge(ride_charge("rr-key-refused-refund"));
  auto partial = refund_of(charge.charge_id, "rr-refund-partial");
  partial.amount = 2500;
  auto too_much = client.create_refund(partial);
  BOOST_TEST((too_much.kind == RefundOutcome::Kind::refused));
  BOOST_TEST(too_much.error_code == "amount_too_large");
  BOOST_TEST(too_much.http_status == 400);
  BOOST_TEST((client.create_refund(refund_of(charge.charge_id, "rr-refund-a")).kind == RefundOutcome::Kind::refunded));
  auto twice = client.create_refund(refund_of(charge.charge_id, "rr-refund-b"));
  BOOST_TEST((twice.kind == RefundOutcome::Kind::refused));
  BOOST_TEST(twice.error_code == "charge_already_refunded");
  BOOST_TEST(twice.message == "Charge " + charge.charge_id + " has already been refunded.");
  auto unknown = client.create_refund(refund_of("ch_nobody", "rr-refund-c"));
  BOOST_TEST((unknown.kind == RefundOutcome::Kind::refused));
  BOOST_TEST(unknown.error_code == "resource_missing");
  BOOST_TEST(unknown.http_status == 404);
  BOOST_TEST(provider.stat("refunds") == 1);
}

BOOST_AUTO_TEST_CASE(a_refund_over_an_injected_500_or_a_dropped_answer_is_unavailable_then_made_once) {
  MockProvider provider;
  auto client = provider.client();
  auto charge = client.create_charge(ride_charge("rr-key-faulty-refund"));
  provider.configure("fail_next=1&drop_next=1");
  auto failed = client.create_refund(refund_of(charge.charge_id, "rr-refund-faulty"));
  BOOST_TEST((failed.kind == RefundOutcome::Kind::unavailable));
  BOOST_TEST(failed.http_status == 500);
  // A fresh client: on a kept-alive connection, the HTTP client resends once over a connection
  // closed under it (with the same key), which would hide the drop.
  auto dropped = provider.client().create_refund(refund_of(charge.charge_id, "rr-refund-faulty"));
  BOOST_TEST((dropped.kind == RefundOutcome::Kind::unavailable));
  BOOST_TEST(dropped.http_status == 0);
  auto retried = client.create_refund(refund_of(charge.charge_id, "rr-refund-faulty"));
  BOOST_TEST((retried.kind == RefundOutcome::Kind::refunded));
  BOOST_TEST(provider.stat("refunds") == 1);
  BOOST_TEST(provider.stat("replays") == 1);

  MockProvider other(rr::test::EnvChanges{{"STRIPE_API_KEY", "sk_test_right"}});
  auto unauthorized = other.client(5000ms, "sk_test_wrong").create_refund(refund_of("ch_any", "rr-refund-auth"));
  BOOST_TEST((unauthorized.kind == RefundOutcome::Kind::unavailable));
  BOOST_TEST(unauthorized.http_status == 401);
}

BOOST_AUTO_TEST_SUITE_END()
