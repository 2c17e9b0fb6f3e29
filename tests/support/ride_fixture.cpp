// Wiring for workflow tests: database, stand-in provider process and the App.
#include "support/ride_fixture.hpp"

#include <rapidjson/document.h>

#include <boost/test/unit_test.hpp>

#include "common/auth/users.hpp"
#include "common/base/random.hpp"
#include "common/http/client.hpp"

namespace rr::test {

StripeMock::StripeMock(const EnvChanges& extra_env) : port_(free_port()) {
  EnvChanges env = extra_env;
  env["PORT"] = std::to_string(port_);
  env["STRIPE_API_KEY"] = "sk_test_rocket";
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{binary("rocket-rides-stripe-mock")}, env);
  BOOST_REQUIRE_MESSAGE(wait_for_port(port_, std::chrono::seconds(10)),
                        "stripe mock did not start: " << process_->output());
}

int StripeMock::stat(const char* name) const {
  auto response = http::send({"GET", base_url() + "/_mock/stats", {}, "", std::chrono::seconds(5)});
  rapidjson::Document doc;
  doc.Parse(response.body.c_str());
  BOOST_REQUIRE(doc.IsObject() && doc.HasMember(name));
  return doc[name].GetInt();
}

int StripeMock::charges() const { return stat("charges"); }
int StripeMock::refunds() const { return stat("refunds"); }

void StripeMock::configure(const std::string& json) const {
  auto response = http::send(
      {"POST", base_url() + "/_mock/config", {{"Content-Type", "application/json"}}, json, std::chrono::seconds(5)});
  BOOST_REQUIRE_MESSAGE(response.status == 200, "mock config failed: " << response.body);
}

api::ApiSettings RideFixture::settings(double stripe_timeout_seconds) const {
  api::ApiSettings s;
  s.database.url = db.url();
  s.database.session = db.session_options();
  s.payment.api_base = stripe.base_url();
  s.payment.api_key = "sk_test_rocket";
  s.payment.timeout = std::chrono::milliseconds(static_cast<long>(stripe_timeout_seconds * 1000));
  s.workflow.lock_timeout = std::chrono::seconds(90);
  s.bind_address = "127.0.0.1";
  s.port = 0;
  s.database_pool_size = 24;
  s.worker_threads = 32;
  // The workflow suites race many requests of one user on purpose (one key from sixteen threads,
  // the completer against retries); the per-user limit has its own suite (api_limits_test).
  s.max_in_flight_per_user = 1000;
  s.shutdown_timeout = std::chrono::seconds(5);
  return s;
}

RideFixture::RideFixture(double stripe_timeout_seconds, idempotency::RunnerOptions options) {
  app = std::make_unique<api::App>(settings(stripe_timeout_seconds), std::move(options));
  token = add_user("alice@example.com", "cus_alice", &user_id);
}

std::string RideFixture::add_user(const std::string& email, const std::string& customer, std::int64_t* id) {
  auto created = auth::create_user(db.conn(), email, customer);
  if (id) *id = created.user.id;
  return created.token;
}

http::Response RideFixture::post_ride(const std::string& key, const std::string& body, const std::string& content_type,
                                      std::optional<std::string> bearer) {
  return app->handle(ride_request(key, body, content_type, std::move(bearer)));
}

std::optional<http::Response> RideFixture::post_ride_in_memory(const std::string& key, const std::string& body) {
  return app->handle_in_memory(ride_request(key, body, "application/x-www-form-urlencoded", std::nullopt));
}

http::Response RideFixture::cancel_ride(const std::string& ride_id, const std::string& key, const std::string& body,
                                        std::optional<std::string> bearer) {
  auto request = ride_request(key, body, "application/x-www-form-urlencoded", std::move(bearer));
  request.target = request.path = "/rides/" + ride_id + "/cancel";
  return app->handle(request);
}

http::Request RideFixture::ride_request(const std::string& key, const std::string& body,
                                        const std::string& content_type, std::optional<std::string> bearer) const {
  http::Request request;
  request.method = "POST";
  request.target = request.path = "/rides";
  request.headers = {
      {"Authorization", "Bearer " + bearer.value_or(token)}, {"Idempotency-Key", key}, {"Content-Type", content_type}};
  request.body = body;
  request.remote_address = "127.0.0.1";
  return request;
}

http::Response RideFixture::get(const std::string& target, std::optional<std::string> bearer) {
  http::Request request;
  request.method = "GET";
  request.target = target;
  auto q = target.find('?');
  request.path = target.substr(0, q);
  request.query = q == std::string::npos ? "" : target.substr(q + 1);
  request.headers = {{"Authorization", "Bearer " + bearer.value_or(token)}};
  request.remote_address = "127.0.0.1";
  return app->handle(request);
}

std::optional<std::string> response_header(const http::Response& response, const std::string& name) {
  if (auto value = response.header(name)) return std::string(*value);
  return std::nullopt;
}

std::string new_key() { return random_uuid(); }

void expire_locks(TestDatabase& db) {
  pqxx::nontransaction tx(db.conn());
  tx.exec("UPDATE idempotency_keys SET locked_at = now() - interval '1 hour' WHERE locked_at IS NOT NULL");
}

}  // namespace rr::test
