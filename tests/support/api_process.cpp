// The API binary as a child process, and the fixture its suites share.
#include "support/api_process.hpp"

#include <boost/test/unit_test.hpp>

#include "common/auth/users.hpp"

namespace rr::test {
namespace {

std::vector<std::string> command(const std::vector<std::string>& argv_prefix) {
  auto argv = argv_prefix;
  argv.push_back(binary("rocket-rides-api"));
  return argv;
}

EnvChanges environment(const TestDatabase& db, const StripeMock& stripe, std::uint16_t port, const EnvChanges& extra) {
  EnvChanges env = {
      {"DATABASE_URL", db.url()},           {"DATABASE_PREPARED_STATEMENTS", db.prepared_statements_setting()},
      {"PORT", std::to_string(port)},       {"STRIPE_API_BASE", stripe.base_url()},
      {"STRIPE_API_KEY", "sk_test_rocket"}, {"SHUTDOWN_TIMEOUT", "10"},
      {"SHUTDOWN_DRAIN", std::nullopt}};
  for (const auto& [name, value] : extra) env[name] = value;
  return env;
}

}  // namespace

ApiProcess::ApiProcess(const TestDatabase& db, const StripeMock& stripe, const EnvChanges& extra,
                       const std::vector<std::string>& argv_prefix, WaitFor wait)
    : ApiProcess(free_port(), db, stripe, extra, argv_prefix, wait) {}

ApiProcess::ApiProcess(std::uint16_t port, const TestDatabase& db, const StripeMock& stripe, const EnvChanges& extra,
                       const std::vector<std::string>& argv_prefix, WaitFor wait)
    : ChildProcess(command(argv_prefix), environment(db, stripe, port, extra)), port_(port) {
  if (wait == WaitFor::port) {
    BOOST_REQUIRE_MESSAGE(wait_for_port(port_, std::chrono::seconds(15)), "api did not start: " << output());
  }
}

http::ClientRequest ApiProcess::ride_request(const std::string& token, const std::string& key, const std::string& body,
                                             std::chrono::milliseconds timeout) const {
  return {"POST",
          url("/rides"),
          {{"Authorization", "Bearer " + token},
           {"Idempotency-Key", key},
           {"Content-Type", "application/x-www-form-urlencoded"}},
          body,
          timeout};
}

http::ClientRequest ApiProcess::get_request(const std::string& path, const std::string& token,
                                            std::chrono::milliseconds timeout) const {
  http::ClientRequest request{"GET", url(path), {}, "", timeout};
  if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  return request;
}

http::ClientResponse ApiProcess::post_ride(const std::string& token, const std::string& key, const std::string& body,
                                           std::chrono::milliseconds timeout) const {
  return http::send(ride_request(token, key, body, timeout));
}

http::ClientResponse ApiProcess::get(const std::string& path, const std::string& token,
                                     std::chrono::milliseconds timeout) const {
  return http::send(get_request(path, token, timeout));
}

ApiFixture::ApiFixture() { token = auth::create_user(db.conn(), "alice@example.com", "cus_alice").token; }

void ApiFixture::start_api(const EnvChanges& extra, const std::vector<std::string>& argv_prefix) {
  api.reset();
  api = std::make_unique<ApiProcess>(db, stripe, extra, argv_prefix);
  port = api->port();
}

}  // namespace rr::test
