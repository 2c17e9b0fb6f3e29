// A real database, a real rocket-rides-stripe-mock process and an api::App wired to both, for
// tests of the ride workflow through App::handle (the same function the HTTP server calls).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/api_app/app.hpp"
#include "support/process.hpp"
#include "support/test_database.hpp"

namespace rr::test {

// The stand-in provider as a child process on a free port.
class StripeMock {
 public:
  explicit StripeMock(const EnvChanges& extra_env = {});
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::uint16_t port() const { return port_; }
  // GET /_mock/stats "charges": distinct charges made.
  int charges() const;
  // GET /_mock/stats "refunds": distinct refunds made.
  int refunds() const;
  // POST /_mock/config with a JSON object, e.g. {"failure_rate":1}.
  void configure(const std::string& json) const;

 private:
  int stat(const char* name) const;
  std::uint16_t port_;
  std::unique_ptr<ChildProcess> process_;
};

struct RideFixture {
  TestDatabase db;
  StripeMock stripe;
  std::unique_ptr<api::App> app;
  std::string token;  // alice's
  std::int64_t user_id = 0;

  explicit RideFixture(double stripe_timeout_seconds = 5, idempotency::RunnerOptions options = {});
  api::ApiSettings settings(double stripe_timeout_seconds) const;
  // A new user with a token; `customer` containing "declined" makes the mock decline.
  std::string add_user(const std::string& email, const std::string& customer, std::int64_t* id = nullptr);

  http::Response post_ride(const std::string& key, const std::string& body = kDefaultForm,
                           const std::string& content_type = "application/x-www-form-urlencoded",
                           std::optional<std::string> bearer = std::nullopt);
  // POST /rides/{ride_id}/cancel through App::handle, with a form body.
  http::Response cancel_ride(const std::string& ride_id, const std::string& key, const std::string& body = "",
                             std::optional<std::string> bearer = std::nullopt);
  // What the server's I/O thread would answer without a worker (App::handle_in_memory).
  std::optional<http::Response> post_ride_in_memory(const std::string& key, const std::string& body = kDefaultForm);
  http::Request ride_request(const std::string& key, const std::string& body, const std::string& content_type,
                             std::optional<std::string> bearer) const;
  http::Response get(const std::string& target, std::optional<std::string> bearer = std::nullopt);
  std::string count(const std::string& table) { return db.scalar("SELECT count(*) FROM " + table); }

  static inline const std::string kDefaultForm =
      "origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712";
};

std::optional<std::string> response_header(const http::Response& response, const std::string& name);
// A fresh idempotency key (36 characters).
std::string new_key();

// Makes every held key lock look expired, as if IDEMPOTENCY_KEY_LOCK_TIMEOUT had passed: the next
// request for such a key takes it over.
void expire_locks(TestDatabase& db);

}  // namespace rr::test
