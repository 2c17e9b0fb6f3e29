// The real rocket-rides-api as a child process on a free loopback port, wired to a test database
// and the stand-in provider, for the suites that test it over real sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/http/client.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

namespace rr::test {

class ApiProcess : public ChildProcess {
 public:
  enum class WaitFor {
    port,     // the usual: the constructor returns once the public port accepts connections
    nothing,  // for a process expected to refuse its settings and exit
  };

  // Environment: DATABASE_URL and DATABASE_PREPARED_STATEMENTS of `db`, PORT, STRIPE_API_BASE of
  // `stripe`, STRIPE_API_KEY sk_test_rocket, SHUTDOWN_TIMEOUT 10 and no SHUTDOWN_DRAIN; then
  // `extra` over these (std::nullopt removes a variable). `argv_prefix` runs the binary under
  // another command, e.g. {"/usr/bin/prlimit", "--nofile=256:256"}.
  ApiProcess(const TestDatabase& db, const StripeMock& stripe, const EnvChanges& extra = {},
             const std::vector<std::string>& argv_prefix = {}, WaitFor wait = WaitFor::port);

  std::uint16_t port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string url(const std::string& path) const { return base_url() + path; }

  // POST /rides with `token` as bearer, `key` as Idempotency-Key and a form body.
  http::ClientRequest ride_request(const std::string& token, const std::string& key,
                                   const std::string& body = RideFixture::kDefaultForm,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // GET `path`, with `token` as bearer unless it is empty.
  http::ClientRequest get_request(const std::string& path, const std::string& token = "",
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // The two above, each on a fresh connection. Throw http::TransportError.
  http::ClientResponse post_ride(const std::string& token, const std::string& key,
                                 const std::string& body = RideFixture::kDefaultForm,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  http::ClientResponse get(const std::string& path, const std::string& token = "",
                           std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

 private:
  ApiProcess(std::uint16_t port, const TestDatabase& db, const StripeMock& stripe, const EnvChanges& extra,
             const std::vector<std::string>& argv_prefix, WaitFor wait);

  std::uint16_t port_;
};

// What the API process suites share: a database with alice in it, the stand-in provider, and an
// API started by each test with the settings it is about.
struct ApiFixture {
  TestDatabase db;
  StripeMock stripe;
  std::string token;  // alice's
  std::uint16_t port = 0;
  std::unique_ptr<ApiProcess> api;

  ApiFixture();
  // Replaces any API this fixture started before (see ApiProcess for `extra` and `argv_prefix`).
  void start_api(const EnvChanges& extra = {}, const std::vector<std::string>& argv_prefix = {});
};

}  // namespace rr::test
