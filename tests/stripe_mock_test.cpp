// The stand-in payment provider: its handler called directly (Stripe's idempotency and errors,
// fault injection, admin endpoints) and its binary (configuration errors, logs, stopping).
#include <rapidjson/document.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cctype>
#include <csignal>
#include <set>
#include <sstream>
#include <thread>

#include "common/http/client.hpp"
#include "common/http/server.hpp"
#include "common/stripe_mock/mock.hpp"
#include "support/process.hpp"

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
  auto listing = post("/v1/charges", "");
  listing.method = "GET";
  BOOST_TEST(mock.handle(listing).status == 404);
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
