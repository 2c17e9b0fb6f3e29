// The stand-in payment provider: its handler called directly (Stripe's idempotency and errors,
// fault injection, admin endpoints) and its binary (configuration errors, logs, stopping).
#include <rapidjson/document.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <sstream>

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
  BOOST_TEST(mock.wait_for_output("path=/v1/charges status=200", 5s));
  BOOST_TEST(mock.output().find(kToken) == std::string::npos);
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
  auto mismatch = rr::http::send(request);
  BOOST_TEST(mismatch.status == 400);
  BOOST_TEST(error_field(mismatch.body, "type") == "idempotency_error");
}

BOOST_AUTO_TEST_SUITE_END()
