// The stand-in payment provider: its handler called directly (Stripe's idempotency and errors,
// fault injection, admin endpoints) and its binary (configuration errors, logs, stopping).
#include <rapidjson/document.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cctype>
#include <csignal>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "common/http/server.hpp"
#include "support/process.hpp"
#include "tools/stripe_mock/mock.hpp"

using namespace std::chrono_literals;
using rr::http::Request;
using rr::http::Response;
using rr::stripe_mock::Faults;
using rr::stripe_mock::Mock;

namespace {

constexpr const char* kToken = "sk_test_mock_secret_4242";

Request post(const std::string& path, const std::string& body, const std::string& key = "") {
  Request request;
  request.method = "POST";
  request.target = request.path = path;
  request.headers = {{"Authorization", std::string("Bearer ") + kToken},
                     {"Content-Type", "application/x-www-form-urlencoded"}};
  if (!key.empty()) request.headers.emplace_back("Idempotency-Key", key);
  request.body = body;
  request.remote_address = "127.0.0.1";
  return request;
}

Request get(const std::string& path) {
  Request request;
  request.method = "GET";
  request.target = request.path = path;
  return request;
}

// A GET of the API, authenticated like the POSTs.
Request authorized_get(const std::string& path) {
  auto request = post(path, "");
  request.method = "GET";
  return request;
}

rapidjson::Document parse(const std::string& body) {
  rapidjson::Document document;
  document.Parse(body.c_str());
  BOOST_REQUIRE(!document.HasParseError());
  return document;
}

std::string member(const std::string& body, const char* name) {
  auto document = parse(body);
  BOOST_REQUIRE(document.IsObject() && document.HasMember(name) && document[name].IsString());
  return document[name].GetString();
}

std::string error_field(const std::string& body, const char* name) {
  auto document = parse(body);
  BOOST_REQUIRE(document.IsObject() && document.HasMember("error") && document["error"].HasMember(name));
  return document["error"][name].GetString();
}

std::int64_t stat(Mock& mock, const char* name) {
  auto document = parse(mock.handle(get("/_mock/stats")).body);
  BOOST_REQUIRE(document.HasMember(name));
  return document[name].GetInt64();
}

std::string header(const Response& response, std::string_view name) {
  for (const auto& [key, value] : response.headers) {
    if (rr::http::iequals(key, name)) return value;
  }
  return "";
}

const std::string kCharge = "amount=2000&currency=usd&customer=cus_rider&description=Ride";

// Stripe's shape: "req_" and 14 letters and digits.
bool is_request_id(const std::string& id) {
  return id.size() == 18 && id.starts_with("req_") &&
         std::all_of(id.begin() + 4, id.end(), [](unsigned char c) { return std::isalnum(c) != 0; });
}

// A new charge of kCharge, by its id.
std::string charge_id(Mock& mock, const std::string& key = "") {
  auto response = mock.handle(post("/v1/charges", kCharge, key));
  BOOST_REQUIRE(response.status == 200);
  return member(response.body, "id");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(stripe_mock_handler)

BOOST_AUTO_TEST_CASE(a_charge_is_created_in_stripe_wire_format) {
  Mock mock("", {}, 1);
  auto response = mock.handle(post("/v1/charges", kCharge, "key-1"));
  BOOST_TEST(response.status == 200);
  auto charge = parse(response.body);
  BOOST_TEST(std::string(charge["id"].GetString()).starts_with("ch_"));
  BOOST_TEST(std::string(charge["object"].GetString()) == "charge");
  BOOST_TEST(charge["amount"].GetInt64() == 2000);
  BOOST_TEST(std::string(charge["currency"].GetString()) == "usd");
  BOOST_TEST(std::string(charge["customer"].GetString()) == "cus_rider");
  BOOST_TEST(std::string(charge["description"].GetString()) == "Ride");
  BOOST_TEST(charge["paid"].GetBool());
  BOOST_TEST(std::string(charge["status"].GetString()) == "succeeded");
  BOOST_TEST(charge["created"].GetInt64() > 1600000000);
  BOOST_TEST(stat(mock, "charges") == 1);
}

BOOST_AUTO_TEST_CASE(the_same_key_and_parameters_replay_the_stored_response) {
  Mock mock("", {}, 1);
  auto first = mock.handle(post("/v1/charges", kCharge, "key-1"));
  // Same parameters in another order are the same request.
  auto again =
      mock.handle(post("/v1/charges", "description=Ride&customer=cus_rider&currency=usd&amount=2000", "key-1"));
  BOOST_TEST(again.status == 200);
  BOOST_TEST(again.body == first.body);
  BOOST_TEST(header(again, "Idempotent-Replayed") == "true");
  BOOST_TEST(header(first, "Idempotent-Replayed") == "");
  BOOST_TEST(stat(mock, "charges") == 1);
  BOOST_TEST(stat(mock, "replays") == 1);
}

BOOST_AUTO_TEST_CASE(the_same_key_with_different_parameters_is_an_idempotency_error) {
  Mock mock("", {}, 1);
  BOOST_TEST(mock.handle(post("/v1/charges", kCharge, "key-1")).status == 200);
  auto mismatch = mock.handle(post("/v1/charges", "amount=2500&currency=usd&customer=cus_rider", "key-1"));
  BOOST_TEST(mismatch.status == 400);
  BOOST_TEST(error_field(mismatch.body, "type") == "idempotency_error");
  auto other_endpoint = mock.handle(post("/v1/customers", "", "key-1"));
  BOOST_TEST(other_endpoint.status == 400);
  BOOST_TEST(error_field(other_endpoint.body, "type") == "idempotency_error");
  BOOST_TEST(stat(mock, "charges") == 1);
}

BOOST_AUTO_TEST_CASE(a_declined_customer_gets_a_402_card_error_that_is_stored_for_the_key) {
  Mock mock("", {}, 1);
  std::string body = "amount=2000&currency=usd&customer=cus_declined_1";
  auto declined = mock.handle(post("/v1/charges", body, "key-d"));
  BOOST_TEST(declined.status == 402);
  BOOST_TEST(error_field(declined.body, "type") == "card_error");
  BOOST_TEST(error_field(declined.body, "code") == "card_declined");
  BOOST_TEST(error_field(declined.body, "decline_code") == "generic_decline");
  BOOST_TEST(error_field(declined.body, "message") == "Your card was declined.");
  auto replay = mock.handle(post("/v1/charges", body, "key-d"));
  BOOST_TEST(replay.status == 402);
  BOOST_TEST(header(replay, "Idempotent-Replayed") == "true");
  BOOST_TEST(stat(mock, "charges") == 0);
}

BOOST_AUTO_TEST_CASE(a_missing_parameter_is_a_400_that_is_not_stored_for_the_key) {
  Mock mock("", {}, 1);
  for (std::string missing : {"amount", "currency", "customer"}) {
    std::string body;
    for (std::string field : {"amount=2000", "currency=usd", "customer=cus_rider"}) {
      if (!field.starts_with(missing)) body += (body.empty() ? "" : "&") + field;
    }
    auto response = mock.handle(post("/v1/charges", body, "key-m"));
    BOOST_TEST(response.status == 400);
    BOOST_TEST(error_field(response.body, "type") == "invalid_request_error");
    BOOST_TEST(error_field(response.body, "param") == missing);
  }
  // The key was not spent on the invalid attempts.
  BOOST_TEST(mock.handle(post("/v1/charges", kCharge, "key-m")).status == 200);
}

BOOST_AUTO_TEST_CASE(requests_without_a_bearer_token_or_with_the_wrong_key_get_401) {
  Mock mock(kToken, {}, 1);
  auto request = post("/v1/charges", kCharge);
  request.headers.erase(request.headers.begin());
  auto anonymous = mock.handle(request);
  BOOST_TEST(anonymous.status == 401);
  BOOST_TEST(error_field(anonymous.body, "type") == "invalid_request_error");
  request.headers.emplace_back("Authorization", "Bearer sk_test_wrong");
  BOOST_TEST(mock.handle(request).status == 401);
  BOOST_TEST(mock.handle(post("/v1/charges", kCharge)).status == 200);
  BOOST_TEST(stat(mock, "charges") == 1);
}

BOOST_AUTO_TEST_CASE(an_injected_failure_records_nothing_and_a_retry_with_the_key_can_succeed) {
  Mock mock("", Faults{.failure_rate = 1.0}, 1);
  auto failed = mock.handle(post("/v1/charges", kCharge, "key-f"));
  BOOST_TEST(failed.status == 500);
  BOOST_TEST(error_field(failed.body, "type") == "api_error");
  BOOST_TEST(stat(mock, "charges") == 0);
  BOOST_TEST(stat(mock, "failures_injected") == 1);
  BOOST_TEST(mock.handle(post("/_mock/config", "failure_rate=0")).status == 200);
  auto retried = mock.handle(post("/v1/charges", kCharge, "key-f"));
  BOOST_TEST(retried.status == 200);
  BOOST_TEST(header(retried, "Idempotent-Replayed") == "");
  BOOST_TEST(stat(mock, "charges") == 1);
}

BOOST_AUTO_TEST_CASE(a_dropped_charge_is_recorded_and_marked_for_the_server_to_drop) {
  Mock mock("", Faults{.drop_rate = 1.0}, 1);
  auto dropped = mock.handle(post("/v1/charges", kCharge, "key-x"));
  BOOST_TEST(header(dropped, rr::http::kDropConnectionHeader) == "1");
  BOOST_TEST(stat(mock, "charges") == 1);
  BOOST_TEST(stat(mock, "drops_injected") == 1);
  auto charges = parse(mock.handle(get("/_mock/charges")).body);
  BOOST_REQUIRE(charges.IsArray());
  BOOST_REQUIRE(charges.Size() == 1u);
  BOOST_TEST(std::string(charges[0]["idempotency_key"].GetString()) == "key-x");
  BOOST_TEST(std::string(charges[0]["id"].GetString()) == member(dropped.body, "id"));
  // Customers are never dropped: only charges are the foreign mutation worth testing.
  BOOST_TEST(header(mock.handle(post("/v1/customers", "")), rr::http::kDropConnectionHeader) == "");
}

BOOST_AUTO_TEST_CASE(the_config_endpoint_takes_json_or_form_and_rejects_bad_values_whole) {
  Mock mock("", {}, 1);
  auto json = post("/_mock/config", R"({"failure_rate":0.25,"latency_ms":5,"drop_rate":0.5})");
  json.headers[1].second = "application/json";
  auto applied = parse(mock.handle(json).body);
  BOOST_TEST(applied["failure_rate"].GetDouble() == 0.25);
  BOOST_TEST(applied["latency_ms"].GetInt64() == 5);
  BOOST_TEST(applied["drop_rate"].GetDouble() == 0.5);
  for (std::string bad : {"failure_rate=1.5", "drop_rate=-1", "latency_ms=abc", "latency_ms=0&drop_rate=x",
                          "speed=fast", "failure_rate=%zz"}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(mock.handle(post("/_mock/config", bad)).status == 400); }
  }
  auto unchanged = parse(mock.handle(get("/_mock/config")).body);
  BOOST_TEST(unchanged["latency_ms"].GetInt64() == 5);
  BOOST_TEST(unchanged["drop_rate"].GetDouble() == 0.5);
}

BOOST_AUTO_TEST_CASE(reset_clears_charges_keys_and_counters) {
  Mock mock("", {}, 1);
  mock.handle(post("/v1/charges", kCharge, "key-r"));
  BOOST_TEST(mock.handle(post("/_mock/reset", "")).status == 200);
  BOOST_TEST(stat(mock, "charges") == 0);
  BOOST_TEST(stat(mock, "requests") == 0);
  BOOST_TEST(mock.handle(get("/_mock/charges")).body == "[]");
  auto fresh = mock.handle(post("/v1/charges", "amount=1&currency=usd&customer=cus_other", "key-r"));
  BOOST_TEST(fresh.status == 200);  // the key was forgotten, so new parameters are no mismatch
}

BOOST_AUTO_TEST_CASE(customers_are_created_with_a_cus_id) {
  Mock mock("", {}, 1);
  auto response = mock.handle(post("/v1/customers", "email=rider%40example.com"));
  BOOST_TEST(response.status == 200);
  BOOST_TEST(member(response.body, "id").starts_with("cus_"));
  BOOST_TEST(member(response.body, "object") == "customer");
  BOOST_TEST(member(response.body, "email") == "rider@example.com");
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_ids) {
  Mock first("", {}, 42), second("", {}, 42), other("", {}, 43);
  auto a = member(first.handle(post("/v1/charges", kCharge)).body, "id");
  BOOST_TEST(a == member(second.handle(post("/v1/charges", kCharge)).body, "id"));
  BOOST_TEST(a != member(other.handle(post("/v1/charges", kCharge)).body, "id"));
}

BOOST_AUTO_TEST_CASE(unknown_urls_and_parameters_are_invalid_requests) {
  Mock mock("", {}, 1);
  auto payouts = post("/v1/payouts", "");
  payouts.method = "GET";
  BOOST_TEST(mock.handle(payouts).status == 404);
  BOOST_TEST(mock.handle(post("/v2/anything", "")).status == 404);
  auto unknown = mock.handle(post("/v1/charges", kCharge + "&capture=false"));
  BOOST_TEST(unknown.status == 400);
  BOOST_TEST(error_field(unknown.body, "param") == "capture");
  BOOST_TEST(mock.handle(post("/v1/charges", kCharge + "&metadata%5Bride%5D=1")).status == 200);
}

// --- what the official client libraries read: request ids, versions, the reference's fields ---

BOOST_AUTO_TEST_CASE(every_answer_carries_a_distinct_request_id_and_the_stripe_version) {
  Mock mock(kToken, Faults{.fail_next = 1}, 1);
  auto anonymous = post("/v1/charges", kCharge);
  anonymous.headers.erase(anonymous.headers.begin());
  std::vector<std::pair<std::string, Response>> answers = {
      {"injected 500", mock.handle(post("/v1/charges", kCharge, "key-h"))},
      {"200", mock.handle(post("/v1/charges", kCharge, "key-h"))},
      {"replay", mock.handle(post("/v1/charges", kCharge, "key-h"))},
      {"idempotency error", mock.handle(post("/v1/charges", kCharge + "&description=Other", "key-h"))},
      {"400", mock.handle(post("/v1/charges", "amount=1"))},
      {"401", mock.handle(anonymous)},
      {"402", mock.handle(post("/v1/charges", "amount=1&currency=usd&customer=cus_declined"))},
      {"404", mock.handle(post("/v1/nothing", ""))},
      {"admin", mock.handle(get("/_mock/stats"))},
  };
  std::set<std::string> ids;
  for (const auto& [what, response] : answers) {
    BOOST_TEST_CONTEXT(what) {
      BOOST_TEST(is_request_id(header(response, "Request-Id")));
      BOOST_TEST(header(response, "Stripe-Version") == std::string(rr::stripe_mock::kDefaultStripeVersion));
      ids.insert(header(response, "Request-Id"));
    }
  }
  BOOST_TEST(ids.size() == answers.size());
  BOOST_TEST(answers[0].second.status == 500);
  BOOST_TEST(answers[5].second.status == 401);
}

BOOST_AUTO_TEST_CASE(the_clients_stripe_version_is_echoed_and_an_empty_one_gets_the_default) {
  Mock mock("", {}, 1);
  auto versioned = post("/v1/customers", "");
  versioned.headers.emplace_back("Stripe-Version", "2026-08-26.dahlia");
  BOOST_TEST(header(mock.handle(versioned), "Stripe-Version") == "2026-08-26.dahlia");
  auto empty = post("/v1/customers", "");
  empty.headers.emplace_back("Stripe-Version", "");
  BOOST_TEST(header(mock.handle(empty), "Stripe-Version") == std::string(rr::stripe_mock::kDefaultStripeVersion));
}

BOOST_AUTO_TEST_CASE(a_replay_names_the_request_that_produced_it) {
  Mock mock("", {}, 1);
  auto first = mock.handle(post("/v1/charges", kCharge, "key-o"));
  auto replay = mock.handle(post("/v1/charges", kCharge, "key-o"));
  BOOST_TEST(header(replay, "Original-Request") == header(first, "Request-Id"));
  BOOST_TEST(header(replay, "Request-Id") != header(first, "Request-Id"));
  BOOST_TEST(header(first, "Original-Request") == "");
}

BOOST_AUTO_TEST_CASE(a_charge_has_the_fields_of_the_api_reference_and_echoes_its_metadata) {
  Mock mock("", {}, 1);
  auto response = mock.handle(
      post("/v1/charges", kCharge + "&metadata%5Bride_id%5D=42&metadata%5Brider%5D=ada&metadata%5Bempty%5D="));
  BOOST_REQUIRE(response.status == 200);
  auto charge = parse(response.body);
  BOOST_TEST(charge["amount_captured"].GetInt64() == 2000);
  BOOST_TEST(charge["amount_refunded"].GetInt64() == 0);
  BOOST_TEST(charge["captured"].GetBool());
  BOOST_TEST(!charge["refunded"].GetBool());
  BOOST_TEST(!charge["livemode"].GetBool());
  BOOST_TEST(std::string(charge["balance_transaction"].GetString()).starts_with("txn_"));
  BOOST_TEST(std::string(charge["receipt_url"].GetString()).starts_with("https://pay.stripe.com/receipts/"));
  BOOST_TEST(charge["failure_code"].IsNull());
  BOOST_TEST(charge["failure_message"].IsNull());
  const auto& metadata = charge["metadata"];
  BOOST_TEST(metadata.MemberCount() == 2u);  // an empty value sets nothing
  BOOST_TEST(std::string(metadata["ride_id"].GetString()) == "42");
  BOOST_TEST(std::string(metadata["rider"].GetString()) == "ada");
  const auto& outcome = charge["outcome"];
  BOOST_TEST(std::string(outcome["network_status"].GetString()) == "approved_by_network");
  BOOST_TEST(outcome["reason"].IsNull());
  BOOST_TEST(std::string(outcome["risk_level"].GetString()) == "normal");
  BOOST_TEST(std::string(outcome["seller_message"].GetString()) == "Payment complete.");
  BOOST_TEST(std::string(outcome["type"].GetString()) == "authorized");
  std::string card = charge["payment_method"].GetString();
  BOOST_TEST(card.starts_with("card_"));
  BOOST_TEST(std::string(charge["source"]["id"].GetString()) == card);
  BOOST_TEST(std::string(charge["source"]["object"].GetString()) == "card");
  BOOST_TEST(std::string(charge["payment_method_details"]["type"].GetString()) == "card");
  BOOST_TEST(std::string(charge["payment_method_details"]["card"]["last4"].GetString()) == "4242");
  const auto& refunds = charge["refunds"];
  BOOST_TEST(std::string(refunds["object"].GetString()) == "list");
  BOOST_TEST(refunds["data"].Size() == 0u);
  BOOST_TEST(refunds["total_count"].GetInt64() == 0);
  BOOST_TEST(!refunds["has_more"].GetBool());
}

BOOST_AUTO_TEST_CASE(a_card_error_names_the_failed_charge_which_moved_no_money) {
  Mock mock("", {}, 1);
  auto declined = mock.handle(post("/v1/charges", "amount=2000&currency=usd&customer=cus_declined_1"));
  BOOST_REQUIRE(declined.status == 402);
  std::string id = error_field(declined.body, "charge");
  BOOST_TEST(id.starts_with("ch_"));
  BOOST_TEST(error_field(declined.body, "doc_url") == "https://stripe.com/docs/error-codes/card-declined");
  auto retrieved = mock.handle(authorized_get("/v1/charges/" + id));
  BOOST_REQUIRE(retrieved.status == 200);
  auto charge = parse(retrieved.body);
  BOOST_TEST(std::string(charge["status"].GetString()) == "failed");
  BOOST_TEST(!charge["paid"].GetBool());
  BOOST_TEST(!charge["captured"].GetBool());
  BOOST_TEST(charge["amount_captured"].GetInt64() == 0);
  BOOST_TEST(charge["balance_transaction"].IsNull());
  BOOST_TEST(std::string(charge["failure_code"].GetString()) == "card_declined");
  BOOST_TEST(std::string(charge["failure_message"].GetString()) == "Your card was declined.");
  BOOST_TEST(std::string(charge["outcome"]["type"].GetString()) == "issuer_declined");
  BOOST_TEST(std::string(charge["outcome"]["reason"].GetString()) == "generic_decline");
  BOOST_TEST(mock.handle(get("/_mock/charges")).body == "[]");
  BOOST_TEST(stat(mock, "charges") == 0);
}

BOOST_AUTO_TEST_CASE(metadata_beyond_stripes_limits_is_refused_and_not_stored) {
  Mock mock("", {}, 1);
  std::string long_key(41, 'k'), long_value(501, 'v'), many;
  for (int i = 0; i < 51; ++i) many += "&metadata%5Bk" + std::to_string(i) + "%5D=v";
  std::vector<std::pair<std::string, std::string>> cases = {
      {kCharge + "&metadata%5B" + long_key + "%5D=v", "metadata[" + long_key + "]"},
      {kCharge + "&metadata%5Bk%5D=" + long_value, "metadata[k]"},
      {kCharge + many, "metadata"},
      {kCharge + "&metadata%5Bk=v", "metadata[k"},
  };
  for (const auto& [body, param] : cases) {
    BOOST_TEST_CONTEXT(param) {
      auto response = mock.handle(post("/v1/charges", body, "key-meta"));
      BOOST_TEST(response.status == 400);
      BOOST_TEST(error_field(response.body, "param") == param);
    }
  }
  BOOST_TEST(mock.handle(post("/v1/charges", kCharge + "&metadata%5Bk%5D=v", "key-meta")).status == 200);
}

BOOST_AUTO_TEST_CASE(customers_have_the_reference_fields_and_are_retrieved_by_id) {
  Mock mock("", {}, 1);
  auto created = mock.handle(post("/v1/customers", "name=Ada&metadata%5Brider%5D=7"));
  BOOST_REQUIRE(created.status == 200);
  auto customer = parse(created.body);
  std::string id = customer["id"].GetString();
  BOOST_TEST(!customer["livemode"].GetBool());
  BOOST_TEST(customer["balance"].GetInt64() == 0);
  BOOST_TEST(customer["email"].IsNull());
  BOOST_TEST(std::string(customer["metadata"]["rider"].GetString()) == "7");
  auto retrieved = mock.handle(authorized_get("/v1/customers/" + id));
  BOOST_TEST(retrieved.status == 200);
  BOOST_TEST(retrieved.body == created.body);
  auto missing = mock.handle(authorized_get("/v1/customers/cus_nobody"));
  BOOST_TEST(missing.status == 404);
  BOOST_TEST(error_field(missing.body, "code") == "resource_missing");
  BOOST_TEST(error_field(missing.body, "message") == "No such customer: 'cus_nobody'");
}

BOOST_AUTO_TEST_CASE(retrieving_needs_the_key_and_an_id) {
  Mock mock(kToken, {}, 1);
  auto charge_id = member(mock.handle(post("/v1/charges", kCharge)).body, "id");
  auto anonymous = get("/v1/charges/" + charge_id);
  BOOST_TEST(mock.handle(anonymous).status == 401);
  BOOST_TEST(mock.handle(authorized_get("/v1/charges/" + charge_id)).status == 200);
  BOOST_TEST(mock.handle(authorized_get("/v1/charges/")).status == 404);
  BOOST_TEST(mock.handle(authorized_get("/v1/charges/" + charge_id + "/refunds")).status == 404);
  auto missing = mock.handle(authorized_get("/v1/charges/ch_missing"));
  BOOST_TEST(missing.status == 404);
  BOOST_TEST(error_field(missing.body, "code") == "resource_missing");
}

BOOST_AUTO_TEST_CASE(a_wrong_key_is_named_by_its_last_four_characters_only) {
  Mock mock(kToken, {}, 1);
  auto request = post("/v1/charges", kCharge);
  request.headers[0].second = "Bearer sk_test_wrong_secret_9876";
  auto refused = mock.handle(request);
  BOOST_TEST(refused.status == 401);
  BOOST_TEST(error_field(refused.body, "message") == "Invalid API Key provided: sk_test_****9876");
}

// --- refunds ---

BOOST_AUTO_TEST_CASE(a_refund_is_created_in_stripe_wire_format_and_shows_on_its_charge) {
  Mock mock("", {}, 1);
  auto charge = charge_id(mock);
  auto response = mock.handle(
      post("/v1/refunds", "charge=" + charge + "&reason=requested_by_customer&metadata%5Bride%5D=9", "key-re"));
  BOOST_REQUIRE(response.status == 200);
  auto refund = parse(response.body);
  std::string id = refund["id"].GetString();
  BOOST_TEST(id.starts_with("re_"));
  BOOST_TEST(std::string(refund["object"].GetString()) == "refund");
  BOOST_TEST(refund["amount"].GetInt64() == 2000);  // the whole charge when no amount is given
  BOOST_TEST(std::string(refund["charge"].GetString()) == charge);
  BOOST_TEST(std::string(refund["currency"].GetString()) == "usd");
  BOOST_TEST(std::string(refund["status"].GetString()) == "succeeded");
  BOOST_TEST(std::string(refund["reason"].GetString()) == "requested_by_customer");
  BOOST_TEST(std::string(refund["balance_transaction"].GetString()).starts_with("txn_"));
  BOOST_TEST(std::string(refund["metadata"]["ride"].GetString()) == "9");
  BOOST_TEST(refund["created"].GetInt64() > 1600000000);

  auto retrieved = mock.handle(authorized_get("/v1/refunds/" + id));
  BOOST_TEST(retrieved.status == 200);
  BOOST_TEST(retrieved.body == response.body);
  auto refunded = parse(mock.handle(authorized_get("/v1/charges/" + charge)).body);
  BOOST_TEST(refunded["refunded"].GetBool());
  BOOST_TEST(refunded["amount_refunded"].GetInt64() == 2000);
  BOOST_TEST(refunded["refunds"]["total_count"].GetInt64() == 1);
  BOOST_TEST(std::string(refunded["refunds"]["data"][0]["id"].GetString()) == id);

  BOOST_TEST(stat(mock, "refunds") == 1);
  auto listed = parse(mock.handle(get("/_mock/refunds")).body);
  BOOST_REQUIRE(listed.Size() == 1u);
  BOOST_TEST(std::string(listed[0]["id"].GetString()) == id);
  BOOST_TEST(std::string(listed[0]["charge"].GetString()) == charge);
  BOOST_TEST(std::string(listed[0]["idempotency_key"].GetString()) == "key-re");
  auto charges = parse(mock.handle(get("/_mock/charges")).body);
  BOOST_TEST(charges[0]["amount_refunded"].GetInt64() == 2000);
  BOOST_TEST(mock.handle(authorized_get("/v1/refunds/re_missing")).status == 404);
}

BOOST_AUTO_TEST_CASE(partial_refunds_add_up_to_the_charge_and_no_further) {
  Mock mock("", {}, 1);
  auto charge = charge_id(mock);
  BOOST_TEST(mock.handle(post("/v1/refunds", "charge=" + charge + "&amount=500")).status == 200);
  auto partly = parse(mock.handle(authorized_get("/v1/charges/" + charge)).body);
  BOOST_TEST(partly["amount_refunded"].GetInt64() == 500);
  BOOST_TEST(!partly["refunded"].GetBool());

  auto too_much = mock.handle(post("/v1/refunds", "charge=" + charge + "&amount=1501", "key-over"));
  BOOST_TEST(too_much.status == 400);
  BOOST_TEST(error_field(too_much.body, "code") == "amount_too_large");
  BOOST_TEST(error_field(too_much.body, "param") == "amount");
  BOOST_TEST(error_field(too_much.body, "message") ==
             "Refund amount ($15.01) is greater than unrefunded amount on charge ($15.00)");
  // Refused, so not stored: the key still takes the right amount.
  auto rest = mock.handle(post("/v1/refunds", "charge=" + charge + "&amount=1500", "key-over"));
  BOOST_TEST(rest.status == 200);
  BOOST_TEST(header(rest, "Idempotent-Replayed") == "");

  auto again = mock.handle(post("/v1/refunds", "charge=" + charge));
  BOOST_TEST(again.status == 400);
  BOOST_TEST(error_field(again.body, "code") == "charge_already_refunded");
  BOOST_TEST(error_field(again.body, "message") == "Charge " + charge + " has already been refunded.");
  auto full = parse(mock.handle(authorized_get("/v1/charges/" + charge)).body);
  BOOST_TEST(full["amount_refunded"].GetInt64() == 2000);
  BOOST_TEST(full["refunded"].GetBool());
  BOOST_TEST(full["refunds"]["total_count"].GetInt64() == 2);
  BOOST_TEST(stat(mock, "refunds") == 2);
}

BOOST_AUTO_TEST_CASE(refunds_of_unknown_or_failed_charges_and_bad_parameters_are_refused) {
  Mock mock("", {}, 1);
  auto charge = charge_id(mock);
  auto declined = mock.handle(post("/v1/charges", "amount=2000&currency=usd&customer=cus_declined"));
  auto failed_charge = error_field(declined.body, "charge");
  struct Case {
    std::string body;
    int status;
    std::string code;
    std::string param;
  };
  std::vector<Case> cases = {
      {"charge=ch_unknown", 404, "resource_missing", "charge"},
      {"charge=" + failed_charge, 400, "charge_not_refundable", "charge"},
      {"amount=100", 400, "parameter_missing", "charge"},
      {"charge=", 400, "parameter_missing", "charge"},
      {"charge=" + charge + "&amount=0", 400, "parameter_invalid_integer", "amount"},
      {"charge=" + charge + "&amount=-5", 400, "parameter_invalid_integer", "amount"},
      {"charge=" + charge + "&amount=12.5", 400, "parameter_invalid_integer", "amount"},
      {"charge=" + charge + "&reason=changed_my_mind", 400, "parameter_invalid_string", "reason"},
      {"charge=" + charge + "&payment_intent=pi_1", 400, "parameter_unknown", "payment_intent"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.body) {
      auto response = mock.handle(post("/v1/refunds", c.body, "key-refused"));
      BOOST_TEST(response.status == c.status);
      BOOST_TEST(error_field(response.body, "type") == "invalid_request_error");
      BOOST_TEST(error_field(response.body, "code") == c.code);
      BOOST_TEST(error_field(response.body, "param") == c.param);
    }
  }
  BOOST_TEST(stat(mock, "refunds") == 0);
  // None of them was stored under the key.
  BOOST_TEST(mock.handle(post("/v1/refunds", "charge=" + charge, "key-refused")).status == 200);
}

BOOST_AUTO_TEST_CASE(a_refund_key_replays_its_refund_and_refuses_other_requests) {
  Mock mock("", {}, 1);
  auto charge = charge_id(mock, "key-shared");
  auto first = mock.handle(post("/v1/refunds", "charge=" + charge + "&amount=700", "key-refund"));
  BOOST_REQUIRE(first.status == 200);
  auto replay = mock.handle(post("/v1/refunds", "amount=700&charge=" + charge, "key-refund"));
  BOOST_TEST(replay.status == 200);
  BOOST_TEST(replay.body == first.body);
  BOOST_TEST(header(replay, "Idempotent-Replayed") == "true");
  auto other_amount = mock.handle(post("/v1/refunds", "charge=" + charge + "&amount=800", "key-refund"));
  BOOST_TEST(other_amount.status == 400);
  BOOST_TEST(error_field(other_amount.body, "type") == "idempotency_error");
  // The charge's key is spent on the charge: a refund under it is another request.
  auto other_endpoint = mock.handle(post("/v1/refunds", "charge=" + charge, "key-shared"));
  BOOST_TEST(other_endpoint.status == 400);
  BOOST_TEST(error_field(other_endpoint.body, "type") == "idempotency_error");
  BOOST_TEST(stat(mock, "refunds") == 1);
  BOOST_TEST(parse(mock.handle(authorized_get("/v1/charges/" + charge)).body)["amount_refunded"].GetInt64() == 700);
}

BOOST_AUTO_TEST_CASE(injected_failures_and_drops_apply_to_refunds_as_to_charges) {
  Mock mock("", {}, 1);
  auto charge = charge_id(mock);
  BOOST_TEST(mock.handle(post("/_mock/config", "fail_next=1&drop_next=1")).status == 200);
  // Customers are no foreign mutation worth a fault: the counts wait for a refund.
  BOOST_TEST(mock.handle(post("/v1/customers", "")).status == 200);
  auto failed = mock.handle(post("/v1/refunds", "charge=" + charge, "key-rf"));
  BOOST_TEST(failed.status == 500);
  BOOST_TEST(error_field(failed.body, "type") == "api_error");
  BOOST_TEST(stat(mock, "refunds") == 0);
  auto dropped = mock.handle(post("/v1/refunds", "charge=" + charge, "key-rf"));
  BOOST_TEST(dropped.status == 200);
  BOOST_TEST(header(dropped, rr::http::kDropConnectionHeader) == "1");
  BOOST_TEST(stat(mock, "refunds") == 1);  // recorded, then the answer was lost
  auto retried = mock.handle(post("/v1/refunds", "charge=" + charge, "key-rf"));
  BOOST_TEST(retried.status == 200);
  BOOST_TEST(header(retried, "Idempotent-Replayed") == "true");
  BOOST_TEST(header(retried, rr::http::kDropConnectionHeader) == "");
  BOOST_TEST(member(retried.body, "id") == member(dropped.body, "id"));
  BOOST_TEST(stat(mock, "refunds") == 1);
  BOOST_TEST(stat(mock, "failures_injected") == 1);
  BOOST_TEST(stat(mock, "drops_injected") == 1);

  Mock failing("", Faults{.failure_rate = 1.0}, 1);
  BOOST_TEST(failing.handle(post("/v1/refunds", "charge=ch_any")).status == 500);
}

BOOST_AUTO_TEST_CASE(the_next_fault_counts_are_set_at_run_time_and_count_down) {
  Mock mock("", {}, 1);
  auto json = post("/_mock/config", R"({"fail_next":2,"drop_next":1})");
  json.headers[1].second = "application/json";
  auto applied = parse(mock.handle(json).body);
  BOOST_TEST(applied["fail_next"].GetInt64() == 2);
  BOOST_TEST(applied["drop_next"].GetInt64() == 1);
  BOOST_TEST(mock.handle(post("/v1/charges", kCharge)).status == 500);
  BOOST_TEST(mock.handle(post("/v1/charges", kCharge)).status == 500);
  auto dropped = mock.handle(post("/v1/charges", kCharge));
  BOOST_TEST(dropped.status == 200);
  BOOST_TEST(header(dropped, rr::http::kDropConnectionHeader) == "1");
  auto clean = mock.handle(post("/v1/charges", kCharge));
  BOOST_TEST(header(clean, rr::http::kDropConnectionHeader) == "");
  auto now = parse(mock.handle(get("/_mock/config")).body);
  BOOST_TEST(now["fail_next"].GetInt64() == 0);
  BOOST_TEST(now["drop_next"].GetInt64() == 0);
  for (std::string bad : {"fail_next=-1", "drop_next=1.5", "fail_next=many", "drop_next=1000001"}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(mock.handle(post("/_mock/config", bad)).status == 400); }
  }
  BOOST_TEST(mock.handle(post("/_mock/config", "fail_next=3")).status == 200);
  auto reset = parse(mock.handle(post("/_mock/reset", "")).body);
  BOOST_TEST(reset["fail_next"].GetInt64() == 0);
}

BOOST_AUTO_TEST_CASE(a_hold_keeps_every_provider_request_waiting_until_it_is_cleared) {
  Mock mock("", {}, 1);
  BOOST_TEST(parse(mock.handle(post("/_mock/config", "hold=1")).body)["hold"].GetInt() == 1);
  auto held = std::async(std::launch::async, [&] { return mock.handle(post("/v1/charges", kCharge)); });
  // Far past the poll interval: the charge is still waiting, and not recorded yet.
  BOOST_TEST((held.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout));
  BOOST_TEST(stat(mock, "charges") == 0);
  BOOST_TEST(parse(mock.handle(post("/_mock/config", "hold=0")).body)["hold"].GetInt() == 0);
  BOOST_TEST_REQUIRE((held.wait_for(std::chrono::seconds(10)) == std::future_status::ready));
  BOOST_TEST(held.get().status == 200);
  BOOST_TEST(stat(mock, "charges") == 1);
  for (std::string bad : {"hold=2", "hold=yes", "hold=-1"}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(mock.handle(post("/_mock/config", bad)).status == 400); }
  }
  BOOST_TEST(parse(mock.handle(post("/_mock/config", "hold=1")).body)["hold"].GetInt() == 1);
  BOOST_TEST(parse(mock.handle(post("/_mock/reset", "")).body)["hold"].GetInt() == 0);
}

BOOST_AUTO_TEST_CASE(a_replay_answers_the_charge_as_it_was_first_answered_even_after_a_refund) {
  Mock mock("", {}, 1);
  auto first = mock.handle(post("/v1/charges", kCharge + "&metadata%5Bride%5D=7", "key-then-refund"));
  BOOST_REQUIRE(first.status == 200);
  auto id = member(first.body, "id");
  BOOST_REQUIRE(mock.handle(post("/v1/refunds", "charge=" + id + "&amount=500")).status == 200);
  // Stripe replays the stored answer: the refund came later and is not part of it.
  auto replay = mock.handle(post("/v1/charges", kCharge + "&metadata%5Bride%5D=7", "key-then-refund"));
  BOOST_TEST(header(replay, "Idempotent-Replayed") == "true");
  BOOST_TEST(replay.body == first.body);
  auto now = parse(mock.handle(authorized_get("/v1/charges/" + id)).body);
  BOOST_TEST(now["amount_refunded"].GetInt64() == 500);
  BOOST_TEST(now["refunds"]["total_count"].GetInt64() == 1);
  // A decline's replay is its first 402, naming the same failed charge.
  auto declined = mock.handle(post("/v1/charges", "amount=1&currency=usd&customer=cus_declined", "key-decline"));
  auto declined_again = mock.handle(post("/v1/charges", "amount=1&currency=usd&customer=cus_declined", "key-decline"));
  BOOST_TEST(declined_again.status == 402);
  BOOST_TEST(declined_again.body == declined.body);
}

BOOST_AUTO_TEST_CASE(a_list_query_that_is_no_form_encoding_is_a_400) {
  Mock mock("", {}, 1);
  auto listing = authorized_get("/v1/charges");
  listing.target = "/v1/charges?limit=%zz";
  listing.query = "limit=%zz";
  auto refused = mock.handle(listing);
  BOOST_TEST(refused.status == 400);
  BOOST_TEST(error_field(refused.body, "type") == "invalid_request_error");
}

BOOST_AUTO_TEST_CASE(beyond_the_bound_the_oldest_keys_are_forgotten_and_every_charge_is_kept) {
  Mock mock("", {}, 1, 3);
  std::vector<std::string> ids;
  for (int i = 1; i <= 4; ++i) ids.push_back(charge_id(mock, "key-" + std::to_string(i)));
  BOOST_TEST(stat(mock, "idempotency_keys") == 3);
  BOOST_TEST(stat(mock, "idempotency_keys_pruned") == 1);
  auto kept = mock.handle(post("/v1/charges", kCharge, "key-4"));
  BOOST_TEST(header(kept, "Idempotent-Replayed") == "true");
  BOOST_TEST(member(kept.body, "id") == ids[3]);
  // key-1 was the oldest: forgotten, as Stripe forgets a key after 24 hours, so it charges again.
  auto forgotten = mock.handle(post("/v1/charges", kCharge, "key-1"));
  BOOST_TEST(header(forgotten, "Idempotent-Replayed") == "");
  BOOST_TEST(member(forgotten.body, "id") != ids[0]);
  BOOST_TEST(stat(mock, "charges") == 5);
  for (const auto& id : ids) BOOST_TEST(mock.handle(authorized_get("/v1/charges/" + id)).status == 200);
  BOOST_TEST(parse(mock.handle(get("/_mock/charges")).body).Size() == 5u);
}

BOOST_AUTO_TEST_CASE(reset_forgets_refunds_and_every_object) {
  Mock mock("", {}, 1);
  auto charge = charge_id(mock);
  auto refund = member(mock.handle(post("/v1/refunds", "charge=" + charge)).body, "id");
  mock.handle(post("/_mock/reset", ""));
  BOOST_TEST(mock.handle(authorized_get("/v1/charges/" + charge)).status == 404);
  BOOST_TEST(mock.handle(authorized_get("/v1/refunds/" + refund)).status == 404);
  BOOST_TEST(mock.handle(get("/_mock/refunds")).body == "[]");
  BOOST_TEST(stat(mock, "refunds") == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(stripe_mock_binary)

BOOST_AUTO_TEST_CASE(bad_configuration_exits_2_with_one_line_naming_the_variable) {
  std::vector<std::pair<std::string, rr::test::EnvChanges>> cases = {
      {"PORT", {{"PORT", std::nullopt}}},
      {"PORT", {{"PORT", "http"}}},
      {"BIND_ADDRESS", {{"PORT", "1"}, {"BIND_ADDRESS", "localhost:80"}}},
      {"MOCK_FAILURE_RATE", {{"PORT", "1"}, {"MOCK_FAILURE_RATE", "1.5"}}},
      {"MOCK_DROP_RATE", {{"PORT", "1"}, {"MOCK_DROP_RATE", "-0.1"}}},
      {"MOCK_LATENCY_MS", {{"PORT", "1"}, {"MOCK_LATENCY_MS", "soon"}}},
      {"MOCK_SEED", {{"PORT", "1"}, {"MOCK_SEED", "-3"}}},
      {"MOCK_MAX_IDEMPOTENCY_KEYS", {{"PORT", "1"}, {"MOCK_MAX_IDEMPOTENCY_KEYS", "0"}}},
  };
  for (const auto& [variable, env] : cases) {
    BOOST_TEST_CONTEXT(variable) {
      auto result = rr::test::run_command({rr::test::binary("rocket-rides-stripe-mock")}, env);
      std::string output = result.out + result.err;
      BOOST_TEST(result.exit_code == 2);
      BOOST_TEST(output.find("variable=" + variable) != std::string::npos);
      BOOST_TEST(std::count(output.begin(), output.end(), '\n') == 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_process_serves_charges_logs_each_request_without_the_token_and_stops_on_sigterm) {
  auto port = rr::test::free_port();
  rr::test::ChildProcess mock({rr::test::binary("rocket-rides-stripe-mock")},
                              {{"PORT", std::to_string(port)}, {"STRIPE_API_KEY", kToken}});
  BOOST_REQUIRE(rr::test::wait_for_port(port, 10s));
  rr::http::ClientRequest request;
  request.method = "POST";
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/charges";
  request.headers = {{"Authorization", std::string("Bearer ") + kToken}, {"Idempotency-Key", "key-p"}};
  request.body = kCharge;
  auto response = rr::http::send(request);
  BOOST_TEST(response.status == 200);
  BOOST_TEST(response.header("content-type") == "application/json");
  BOOST_TEST(is_request_id(response.header("request-id")));
  BOOST_TEST(response.header("stripe-version") == std::string(rr::stripe_mock::kDefaultStripeVersion));
  BOOST_TEST(mock.wait_for_output("path=/v1/charges status=200", 5s));
  BOOST_TEST(mock.output().find(kToken) == std::string::npos);
  mock.signal(SIGTERM);
  auto status = mock.wait(5s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(*status == 0);
}

// Every binary ignores SIGPIPE (cli::run_main): a reader of its log that goes away (a log shipper
// restarted, `| head`) costs log lines, not the process. Here the reader takes the first line and
// exits; each request's log line is then written to a pipe nobody reads.
BOOST_AUTO_TEST_CASE(the_process_keeps_serving_when_the_reader_of_its_log_goes_away) {
  auto port = rr::test::free_port();
  rr::test::ChildProcess mock(
      {"/bin/bash", "-c", "exec " + rr::test::binary("rocket-rides-stripe-mock") + " > >(head -n 1 > /dev/null)"},
      {{"PORT", std::to_string(port)}});
  BOOST_REQUIRE(rr::test::wait_for_port(port, 10s));
  rr::http::ClientRequest request;
  request.method = "POST";
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/charges";
  request.headers = {{"Authorization", "Bearer sk_test_any"}};
  request.body = kCharge;
  for (int i = 0; i < 5; ++i) {
    BOOST_TEST(rr::http::send(request).status == 200);
    std::this_thread::sleep_for(100ms);  // past the log's flush interval: the line is written
  }
  BOOST_TEST(mock.running());
  mock.signal(SIGTERM);
  auto status = mock.wait(5s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(*status == 0);
}

BOOST_AUTO_TEST_CASE(the_process_answers_a_parameter_mismatch_with_an_idempotency_error) {
  auto port = rr::test::free_port();
  rr::test::ChildProcess mock({rr::test::binary("rocket-rides-stripe-mock")}, {{"PORT", std::to_string(port)}});
  BOOST_REQUIRE(rr::test::wait_for_port(port, 10s));
  rr::http::ClientRequest request;
  request.method = "POST";
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/charges";
  request.headers = {{"Authorization", "Bearer sk_test_any"}, {"Idempotency-Key", "key-mismatch"}};
  request.body = kCharge;
  BOOST_TEST(rr::http::send(request).status == 200);
  request.body = "amount=9999&currency=usd&customer=cus_rider";
  request.headers.emplace_back("Stripe-Version", "2026-08-26.dahlia");
  auto mismatch = rr::http::send(request);
  BOOST_TEST(mismatch.status == 400);
  BOOST_TEST(error_field(mismatch.body, "type") == "idempotency_error");
  // Errors carry them too, over the wire.
  BOOST_TEST(is_request_id(mismatch.header("request-id")));
  BOOST_TEST(mismatch.header("stripe-version") == "2026-08-26.dahlia");
}

BOOST_AUTO_TEST_SUITE_END()

// --- Stripe's lists, over HTTP against the real binary: what a reconciliation pages through ---

namespace {

// The stand-in provider started as a process of its own, and a client for it.
class RunningMock {
 public:
  explicit RunningMock(rr::test::EnvChanges env = {})
      : port_(rr::test::free_port()), process_({rr::test::binary("rocket-rides-stripe-mock")}, with_port(env)) {
    BOOST_REQUIRE(rr::test::wait_for_port(port_, 10s));
  }

  rr::http::ClientResponse call(const std::string& method, const std::string& target, const std::string& body = "",
                                const std::string& key = "", std::chrono::milliseconds timeout = 10s) {
    rr::http::ClientRequest request;
    request.method = method;
    request.url = "http://127.0.0.1:" + std::to_string(port_) + target;
    if (target.starts_with("/v1/")) request.headers.emplace_back("Authorization", std::string("Bearer ") + kToken);
    if (!key.empty()) request.headers.emplace_back("Idempotency-Key", key);
    request.body = body;
    request.timeout = timeout;
    return client_.send(request);
  }
  // A GET on a connection of its own: the kept connections' client sends a GET again, once, when
  // its connection is closed without an answer, and a test of a dropped answer must see the drop.
  rr::http::ClientResponse get_once(const std::string& target) {
    rr::http::ClientRequest request;
    request.url = "http://127.0.0.1:" + std::to_string(port_) + target;
    request.headers.emplace_back("Authorization", std::string("Bearer ") + kToken);
    return rr::http::send(request);
  }
  // A GET with this Authorization header ("": none).
  rr::http::ClientResponse call_as(const std::string& authorization, const std::string& target) {
    rr::http::ClientRequest request;
    request.url = "http://127.0.0.1:" + std::to_string(port_) + target;
    if (!authorization.empty()) request.headers.emplace_back("Authorization", authorization);
    return client_.send(request);
  }
  rr::http::ClientResponse get(const std::string& target) { return call("GET", target); }

  // A new charge, its JSON.
  rapidjson::Document charge(const std::string& body) {
    auto response = call("POST", "/v1/charges", body);
    BOOST_REQUIRE_EQUAL(response.status, 200);
    return parse(response.body);
  }
  std::int64_t stat(const char* name) {
    auto document = parse(get("/_mock/stats").body);
    BOOST_REQUIRE(document.HasMember(name));
    return document[name].GetInt64();
  }
  void configure(const std::string& form) { BOOST_REQUIRE_EQUAL(call("POST", "/_mock/config", form).status, 200); }
  bool running() { return process_.running(); }

 private:
  rr::test::EnvChanges with_port(rr::test::EnvChanges env) const {
    env["PORT"] = std::to_string(port_);
    env["STRIPE_API_KEY"] = kToken;
    return env;
  }

  std::uint16_t port_;
  rr::test::ChildProcess process_;
  rr::http::Client client_;
};

// One page of a list: its ids in order, has_more, and the list object's other fields checked.
struct ListPage {
  std::vector<std::string> ids;
  bool has_more = false;
};

ListPage list_page(RunningMock& mock, const std::string& target) {
  auto response = mock.get(target);
  BOOST_REQUIRE_MESSAGE(response.status == 200, target + ": " + std::to_string(response.status) + " " + response.body);
  auto list = parse(response.body);
  BOOST_REQUIRE(list.IsObject());
  BOOST_TEST(std::string(list["object"].GetString()) == "list");
  std::string path = target.substr(0, target.find('?'));
  BOOST_TEST(std::string(list["url"].GetString()) == path);
  ListPage page;
  page.has_more = list["has_more"].GetBool();
  for (const auto& object : list["data"].GetArray()) page.ids.emplace_back(object["id"].GetString());
  return page;
}

// Every object of a list, page by page with starting_after, as a client's auto-pagination does.
std::vector<std::string> walk(RunningMock& mock, const std::string& path, const std::string& query, int limit) {
  std::vector<std::string> ids;
  std::string cursor;
  for (int pages = 0; pages < 1000; ++pages) {
    std::string target = path + "?limit=" + std::to_string(limit) + query;
    if (!cursor.empty()) target += "&starting_after=" + cursor;
    auto page = list_page(mock, target);
    BOOST_TEST(page.ids.size() <= static_cast<std::size_t>(limit));
    ids.insert(ids.end(), page.ids.begin(), page.ids.end());
    if (!page.has_more) return ids;
    BOOST_REQUIRE(!page.ids.empty());
    cursor = page.ids.back();
  }
  BOOST_FAIL("the list never ended");
  return ids;
}

std::string error_of(const rr::http::ClientResponse& response, const char* field) {
  return error_field(response.body, field);
}

std::vector<std::string> reversed(std::vector<std::string> ids) {
  std::reverse(ids.begin(), ids.end());
  return ids;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(stripe_mock_lists)

BOOST_AUTO_TEST_CASE(paging_with_starting_after_visits_every_charge_once_newest_first) {
  RunningMock mock;
  // 250 charges, most of them within the same second: ties in `created` must not skip or repeat.
  std::vector<std::string> created;
  for (int i = 0; i < 250; ++i) {
    auto customer = i % 3 == 0 ? "cus_declined_sometimes" : "cus_rider";  // failed charges are listed too
    auto response =
        mock.call("POST", "/v1/charges", "amount=" + std::to_string(100 + i) + "&currency=usd&customer=" + customer);
    BOOST_REQUIRE(response.status == 200 || response.status == 402);
    created.push_back(response.status == 200 ? member(response.body, "id") : error_of(response, "charge"));
  }
  auto pages = list_page(mock, "/v1/charges?limit=100");
  BOOST_TEST(pages.ids.size() == 100u);
  BOOST_TEST(pages.has_more);
  auto all = walk(mock, "/v1/charges", "", 100);
  BOOST_TEST(all == reversed(created), boost::test_tools::per_element());
  BOOST_TEST(std::set<std::string>(all.begin(), all.end()).size() == 250u);
  // Odd page sizes too.
  BOOST_TEST(walk(mock, "/v1/charges", "", 7) == reversed(created), boost::test_tools::per_element());

  // Without a limit: ten. ending_before gives the page just newer than its object, newest first.
  auto first = list_page(mock, "/v1/charges");
  BOOST_TEST(first.ids.size() == 10u);
  BOOST_TEST(first.has_more);
  auto third_page = list_page(mock, "/v1/charges?limit=100&starting_after=" + all[199]);
  BOOST_TEST(third_page.ids.size() == 50u);
  BOOST_TEST(!third_page.has_more);
  auto back = list_page(mock, "/v1/charges?limit=100&ending_before=" + all[200]);
  BOOST_TEST(back.ids == std::vector<std::string>(all.begin() + 100, all.begin() + 200),
             boost::test_tools::per_element());
  BOOST_TEST(back.has_more);
  auto newest = list_page(mock, "/v1/charges?limit=5&ending_before=" + all[5]);
  BOOST_TEST(newest.ids == std::vector<std::string>(all.begin(), all.begin() + 5), boost::test_tools::per_element());
  BOOST_TEST(!newest.has_more);
  BOOST_TEST(list_page(mock, "/v1/charges?ending_before=" + all[0]).ids.empty());
  BOOST_TEST(list_page(mock, "/v1/charges?starting_after=" + all[249]).ids.empty());
}

BOOST_AUTO_TEST_CASE(created_ranges_include_their_gte_and_lte_edges_and_exclude_gt_and_lt) {
  RunningMock mock;
  // Charges in at least three different seconds, newest first as the list gives them.
  std::vector<std::pair<std::string, std::int64_t>> newest_first;
  for (int group = 0; group < 3; ++group) {
    if (group > 0) std::this_thread::sleep_for(1100ms);
    for (int i = 0; i < 3; ++i) {
      auto charge = mock.charge(kCharge);
      newest_first.insert(newest_first.begin(), {charge["id"].GetString(), charge["created"].GetInt64()});
    }
  }
  std::set<std::int64_t> seconds;
  for (const auto& [id, created] : newest_first) seconds.insert(created);
  BOOST_REQUIRE(seconds.size() >= 3u);
  auto expect = [&](auto keep) {
    std::vector<std::string> ids;
    for (const auto& [id, created] : newest_first) {
      if (keep(created)) ids.push_back(id);
    }
    return ids;
  };
  for (auto t : seconds) {
    auto at = std::to_string(t);
    BOOST_TEST_CONTEXT("created at " << at) {
      BOOST_TEST(walk(mock, "/v1/charges", "&created%5Bgte%5D=" + at, 2) == expect([&](auto c) { return c >= t; }),
                 boost::test_tools::per_element());
      BOOST_TEST(walk(mock, "/v1/charges", "&created%5Bgt%5D=" + at, 2) == expect([&](auto c) { return c > t; }),
                 boost::test_tools::per_element());
      BOOST_TEST(walk(mock, "/v1/charges", "&created%5Blte%5D=" + at, 2) == expect([&](auto c) { return c <= t; }),
                 boost::test_tools::per_element());
      BOOST_TEST(walk(mock, "/v1/charges", "&created%5Blt%5D=" + at, 2) == expect([&](auto c) { return c < t; }),
                 boost::test_tools::per_element());
      BOOST_TEST(walk(mock, "/v1/charges", "&created=" + at, 100) == expect([&](auto c) { return c == t; }),
                 boost::test_tools::per_element());
    }
  }
  auto low = *seconds.begin(), high = *seconds.rbegin();
  BOOST_TEST(
      walk(mock, "/v1/charges", "&created%5Bgt%5D=" + std::to_string(low) + "&created%5Blt%5D=" + std::to_string(high),
           1) == expect([&](auto c) { return c > low && c < high; }),
      boost::test_tools::per_element());
  BOOST_TEST(list_page(mock, "/v1/charges?created%5Bgt%5D=" + std::to_string(high)).ids.empty());
  BOOST_TEST(list_page(mock, "/v1/charges?created%5Bgte%5D=" + std::to_string(high) +
                                 "&created%5Blt%5D=" + std::to_string(high))
                 .ids.empty());
}

BOOST_AUTO_TEST_CASE(limits_and_bad_parameters_are_refused_in_stripes_words_and_nothing_crashes) {
  RunningMock mock;
  mock.charge(kCharge);
  BOOST_TEST(list_page(mock, "/v1/charges?limit=1").ids.size() == 1u);
  BOOST_TEST(list_page(mock, "/v1/charges?limit=100").ids.size() == 1u);
  struct Case {
    std::string target;
    std::string param;
    std::string code;
    std::string message;
  };
  std::vector<Case> cases = {
      {"/v1/charges?limit=0", "limit", "parameter_invalid_integer", "This value must be greater than or equal to 1."},
      {"/v1/charges?limit=-5", "limit", "parameter_invalid_integer", "This value must be greater than or equal to 1."},
      {"/v1/charges?limit=101", "limit", "parameter_invalid_integer", "This value must be less than or equal to 100."},
      {"/v1/charges?limit=ten", "limit", "parameter_invalid_integer", "Invalid integer: ten"},
      {"/v1/charges?limit=1.5", "limit", "parameter_invalid_integer", "Invalid integer: 1.5"},
      {"/v1/charges?limit=99999999999999999999", "limit", "parameter_invalid_integer",
       "Invalid integer: 99999999999999999999"},
      {"/v1/charges?limit=", "limit", "parameter_invalid_empty", ""},
      {"/v1/charges?created=yesterday", "created", "parameter_invalid_integer", "Invalid integer: yesterday"},
      {"/v1/charges?created%5Bgte%5D=now", "created[gte]", "parameter_invalid_integer", "Invalid integer: now"},
      {"/v1/charges?created%5Bafter%5D=1", "created[after]", "parameter_unknown",
       "Received unknown parameter: created[after]"},
      {"/v1/charges?created=1&created%5Bgt%5D=0", "created", "", ""},
      {"/v1/charges?starting_after=", "starting_after", "parameter_invalid_empty", ""},
      {"/v1/charges?customer=", "customer", "parameter_invalid_empty", ""},
      {"/v1/charges?expand%5B%5D=data.customer", "expand[]", "parameter_unknown",
       "Received unknown parameter: expand[]"},
      {"/v1/charges?charge=ch_x", "charge", "parameter_unknown", "Received unknown parameter: charge"},
      {"/v1/refunds?customer=cus_rider", "customer", "parameter_unknown", "Received unknown parameter: customer"},
      {"/v1/refunds?limit=500", "limit", "parameter_invalid_integer", "This value must be less than or equal to 100."},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.target) {
      auto response = mock.get(c.target);
      BOOST_TEST(response.status == 400);
      auto document = parse(response.body);
      auto error = document["error"].GetObject();
      BOOST_TEST(std::string(error["type"].GetString()) == "invalid_request_error");
      BOOST_TEST(error.HasMember("message"));
      if (!c.param.empty()) BOOST_TEST(std::string(error["param"].GetString()) == c.param);
      if (!c.code.empty()) BOOST_TEST(std::string(error["code"].GetString()) == c.code);
      if (!c.message.empty()) BOOST_TEST(std::string(error["message"].GetString()) == c.message);
    }
  }
  auto both = mock.get("/v1/charges?starting_after=" + list_page(mock, "/v1/charges").ids[0] +
                       "&ending_before=" + list_page(mock, "/v1/charges").ids[0]);
  BOOST_TEST(both.status == 400);
  BOOST_TEST(error_of(both, "message") ==
             "Received both starting_after and ending_before parameters. Please pass in only one.");
  BOOST_TEST(mock.running());
}

BOOST_AUTO_TEST_CASE(lists_need_the_api_key) {
  RunningMock mock;
  for (const std::string path : {"/v1/charges", "/v1/refunds"}) {
    BOOST_TEST_CONTEXT(path) {
      auto anonymous = mock.call_as("", path);
      BOOST_TEST(anonymous.status == 401);
      BOOST_TEST(error_of(anonymous, "type") == "invalid_request_error");
      auto wrong = mock.call_as("Bearer sk_test_wrong_key_1234", path);
      BOOST_TEST(wrong.status == 401);
      BOOST_TEST(error_of(wrong, "message") == "Invalid API Key provided: sk_test_****1234");
    }
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_cursor_is_a_400_naming_the_cursor) {
  RunningMock mock;
  auto charge = mock.charge(kCharge);
  for (const std::string cursor : {"starting_after", "ending_before"}) {
    BOOST_TEST_CONTEXT(cursor) {
      auto charges = mock.get("/v1/charges?" + cursor + "=ch_nothere");
      BOOST_TEST(charges.status == 400);
      BOOST_TEST(error_of(charges, "type") == "invalid_request_error");
      BOOST_TEST(error_of(charges, "code") == "resource_missing");
      BOOST_TEST(error_of(charges, "param") == cursor);
      BOOST_TEST(error_of(charges, "message") == "No such charge: 'ch_nothere'");
      auto refunds = mock.get("/v1/refunds?" + cursor + "=re_nothere");
      BOOST_TEST(refunds.status == 400);
      BOOST_TEST(error_of(refunds, "message") == "No such refund: 're_nothere'");
      // A charge's id is no refund's cursor.
      BOOST_TEST(mock.get("/v1/refunds?" + cursor + "=" + charge["id"].GetString()).status == 400);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_customer_and_charge_filters_list_only_their_own) {
  RunningMock mock;
  std::vector<std::string> ada, bob;
  for (int i = 0; i < 5; ++i) {
    ada.push_back(mock.charge("amount=1000&currency=usd&customer=cus_ada")["id"].GetString());
    if (i < 2) bob.push_back(mock.charge("amount=2000&currency=eur&customer=cus_bob")["id"].GetString());
  }
  BOOST_TEST(walk(mock, "/v1/charges", "&customer=cus_ada", 2) == reversed(ada), boost::test_tools::per_element());
  BOOST_TEST(walk(mock, "/v1/charges", "&customer=cus_bob", 100) == reversed(bob), boost::test_tools::per_element());
  // ending_before within the filter: the customer's charges newer than the cursor, nearest first.
  auto newer = list_page(mock, "/v1/charges?customer=cus_ada&limit=2&ending_before=" + ada[1]);
  BOOST_TEST(newer.ids == (std::vector<std::string>{ada[3], ada[2]}), boost::test_tools::per_element());
  BOOST_TEST(newer.has_more);
  auto unknown = mock.get("/v1/charges?customer=cus_nobody");
  BOOST_TEST(unknown.status == 400);
  BOOST_TEST(error_of(unknown, "code") == "resource_missing");
  BOOST_TEST(error_of(unknown, "param") == "customer");
  BOOST_TEST(error_of(unknown, "message") == "No such customer: 'cus_nobody'");
  // A customer created here and never charged has an empty list.
  auto created = mock.call("POST", "/v1/customers", "name=Cy");
  auto cy = list_page(mock, "/v1/charges?customer=" + member(created.body, "id"));
  BOOST_TEST(cy.ids.empty());
  BOOST_TEST(!cy.has_more);

  // Refunds: two of one charge, one of another; the filter lists a charge's own, newest first.
  std::vector<std::string> of_first, all_refunds;
  for (auto amount : {"100", "200"}) {
    auto refund = mock.call("POST", "/v1/refunds", "charge=" + ada[0] + "&amount=" + amount);
    BOOST_REQUIRE_EQUAL(refund.status, 200);
    of_first.push_back(member(refund.body, "id"));
    all_refunds.push_back(of_first.back());
  }
  auto other = mock.call("POST", "/v1/refunds", "charge=" + bob[0]);
  all_refunds.push_back(member(other.body, "id"));
  BOOST_TEST(walk(mock, "/v1/refunds", "&charge=" + ada[0], 1) == reversed(of_first), boost::test_tools::per_element());
  BOOST_TEST(walk(mock, "/v1/refunds", "", 2) == reversed(all_refunds), boost::test_tools::per_element());
  BOOST_TEST(list_page(mock, "/v1/refunds?charge=" + ada[1]).ids.empty());
  auto no_charge = mock.get("/v1/refunds?charge=ch_nothere");
  BOOST_TEST(no_charge.status == 400);
  BOOST_TEST(error_of(no_charge, "param") == "charge");
  BOOST_TEST(error_of(no_charge, "message") == "No such charge: 'ch_nothere'");
  // The listed charge is as it is now: refunded in part, its refunds newest first.
  auto listed = parse(mock.get("/v1/charges?customer=cus_ada&created%5Bgte%5D=0&limit=100").body);
  BOOST_REQUIRE(listed.HasMember("data") && listed["data"].Size() == 5u);
  const auto& first_charge = listed["data"][4];
  BOOST_TEST(std::string(first_charge["id"].GetString()) == ada[0]);
  BOOST_TEST(first_charge["amount_refunded"].GetInt64() == 300);
  BOOST_TEST(std::string(first_charge["refunds"]["data"][0]["id"].GetString()) == of_first[1]);
}

BOOST_AUTO_TEST_CASE(metadata_comes_back_exactly_on_create_retrieve_and_in_the_lists) {
  RunningMock mock;
  std::string long_key(40, 'k'), long_value(500, 'v');
  std::vector<std::pair<std::string, std::string>> sent = {
      {"ride_id", "42"}, {long_key, long_value}, {"note", "caf\xc3\xa9 & \"quotes\" = 1+1"}};
  std::string fields;
  for (const auto& [key, value] : sent) fields += "&" + rr::http::form_encode({{"metadata[" + key + "]", value}});
  auto check = [&](const rapidjson::Value& object, const char* where) {
    BOOST_TEST_CONTEXT(where) {
      BOOST_REQUIRE(object.IsObject() && object.HasMember("metadata"));
      const auto& metadata = object["metadata"];
      BOOST_TEST(metadata.MemberCount() == sent.size());
      for (const auto& [key, value] : sent) {
        BOOST_TEST_REQUIRE(metadata.HasMember(key.c_str()));
        BOOST_TEST(std::string(metadata[key.c_str()].GetString()) == value);
      }
    }
  };
  // The first object a list gives, required to be there (a missing member would abort, not fail).
  auto first_of = [&](const std::string& target) {
    auto response = mock.get(target);
    BOOST_REQUIRE_MESSAGE(response.status == 200, target + ": " + std::to_string(response.status));
    auto list = parse(response.body);
    BOOST_REQUIRE(list.HasMember("data") && list["data"].IsArray() && !list["data"].Empty());
    rapidjson::Document first;
    first.CopyFrom(list["data"][0], first.GetAllocator());
    return first;
  };
  auto charge = mock.charge(kCharge + fields);
  check(charge, "charge create");
  std::string id = charge["id"].GetString();
  check(parse(mock.get("/v1/charges/" + id).body), "charge retrieve");
  check(first_of("/v1/charges?limit=1"), "charge list");

  auto refund_response = mock.call("POST", "/v1/refunds", "charge=" + id + fields);
  BOOST_REQUIRE_EQUAL(refund_response.status, 200);
  auto refund = parse(refund_response.body);
  check(refund, "refund create");
  std::string refund_id = refund["id"].GetString();
  check(parse(mock.get("/v1/refunds/" + refund_id).body), "refund retrieve");
  check(first_of("/v1/refunds?charge=" + id), "refund list");
  auto refunded = first_of("/v1/charges?limit=1");
  BOOST_REQUIRE(refunded["refunds"]["data"].Size() == 1u);
  check(refunded["refunds"]["data"][0], "refund on its charge");

  // Beyond Stripe's limits: refused, on refunds as on charges.
  std::string many;
  for (int i = 0; i < 51; ++i) many += "&metadata%5Bk" + std::to_string(i) + "%5D=v";
  std::string other_id = mock.charge(kCharge)["id"].GetString();
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {"&metadata%5B" + std::string(41, 'k') + "%5D=v", "metadata[" + std::string(41, 'k') + "]"},
           {"&metadata%5Bk%5D=" + std::string(501, 'v'), "metadata[k]"},
           {many, "metadata"}}) {
    BOOST_TEST_CONTEXT(param) {
      auto refused = mock.call("POST", "/v1/refunds", "charge=" + other_id + body);
      BOOST_TEST(refused.status == 400);
      BOOST_TEST(error_of(refused, "param") == param);
      BOOST_TEST(mock.call("POST", "/v1/charges", kCharge + body).status == 400);
    }
  }
  BOOST_TEST(list_page(mock, "/v1/refunds?charge=" + other_id).ids.empty());
}

BOOST_AUTO_TEST_CASE(a_listing_fails_hangs_and_drops_mid_way_and_a_retried_walk_is_still_whole) {
  RunningMock mock;
  std::vector<std::string> created;
  for (int i = 0; i < 30; ++i) created.push_back(mock.charge(kCharge)["id"].GetString());
  std::vector<std::string> seen;
  auto first = list_page(mock, "/v1/charges?limit=10");
  seen = first.ids;
  std::string next = "/v1/charges?limit=10&starting_after=" + seen.back();

  mock.configure("fail_next=1");
  auto failed = mock.get(next);
  BOOST_TEST(failed.status == 500);
  BOOST_TEST(error_of(failed, "type") == "api_error");
  auto second = list_page(mock, next);
  seen.insert(seen.end(), second.ids.begin(), second.ids.end());
  next = "/v1/charges?limit=10&starting_after=" + seen.back();

  mock.configure("drop_next=1");
  BOOST_CHECK_THROW(mock.get_once(next), rr::http::TransportError);  // closed without an answer
  BOOST_TEST(mock.stat("drops_injected") == 1);

  mock.configure("latency_ms=1500");
  try {
    mock.call("GET", next, "", "", 300ms);
    BOOST_FAIL("a hanging provider answered");
  } catch (const rr::http::TransportError& e) {
    BOOST_TEST(e.timed_out());
  }
  mock.configure("latency_ms=0");

  auto third = list_page(mock, next);
  BOOST_TEST(!third.has_more);
  seen.insert(seen.end(), third.ids.begin(), third.ids.end());
  BOOST_TEST(seen == reversed(created), boost::test_tools::per_element());
  BOOST_TEST(mock.stat("failures_injected") == 1);
  // The refunds' list fails the same way.
  mock.configure("fail_next=1");
  BOOST_TEST(mock.get("/v1/refunds").status == 500);
  BOOST_TEST(mock.get("/v1/refunds").status == 200);
}

BOOST_AUTO_TEST_SUITE_END()
