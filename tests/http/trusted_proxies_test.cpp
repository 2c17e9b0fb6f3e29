// API_TRUSTED_PROXIES: which peers may name the client in X-Forwarded-For, the
// list's parsing, and over real HTTP the address stored as origin_ip on keys and audit records.
#include "common/http/trusted_proxies.hpp"

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include "common/api_app/api_settings.hpp"
#include "common/auth/users.hpp"
#include "common/config/environment.hpp"
#include "support/api_process.hpp"
#include "support/raw_connection.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using rr::http::Headers;
using rr::http::TrustedProxies;
using namespace rr::test;

BOOST_AUTO_TEST_SUITE(trusted_proxies)

BOOST_AUTO_TEST_CASE(addresses_and_cidrs_of_both_families_are_trusted_and_nothing_else) {
  auto proxies = TrustedProxies::parse(" 10.0.0.5, 192.168.0.0/16,fd00::/8, ::1 ");
  BOOST_TEST(proxies.contains("10.0.0.5"));
  BOOST_TEST(!proxies.contains("10.0.0.6"));
  BOOST_TEST(proxies.contains("192.168.200.1"));
  BOOST_TEST(!proxies.contains("192.169.0.1"));
  BOOST_TEST(proxies.contains("fd12:3456::1"));
  BOOST_TEST(!proxies.contains("fe80::1"));
  BOOST_TEST(proxies.contains("::1"));
  BOOST_TEST(proxies.contains("::ffff:10.0.0.5"));  // as a dual-stack socket reports IPv4
  BOOST_TEST(!proxies.contains("garbage"));
  BOOST_TEST(TrustedProxies::parse("").empty());
  BOOST_TEST(TrustedProxies::parse("0.0.0.0/0").contains("203.0.113.7"));
}

BOOST_AUTO_TEST_CASE(a_list_it_cannot_read_is_refused_naming_the_element) {
  for (std::string list : {"10.0.0.300", "10.0.0.0/33", "fd00::/129", "10.0.0.1,", "10.0.0.0/", "10.0.0.0/8x",
                           "proxy.example.com", "10.0.0.1 10.0.0.2"}) {
    BOOST_TEST_CONTEXT(list) { BOOST_CHECK_THROW(TrustedProxies::parse(list), std::invalid_argument); }
  }
}

BOOST_AUTO_TEST_CASE(the_client_is_the_right_most_address_no_trusted_proxy_wrote) {
  auto proxies = TrustedProxies::parse("127.0.0.1, 10.0.0.0/8");
  Headers xff = {{"X-Forwarded-For", "1.2.3.4, 203.0.113.7"}};
  BOOST_TEST(proxies.client_address("127.0.0.1", xff) == "203.0.113.7");
  BOOST_TEST(proxies.client_address("127.0.0.2", xff) == "127.0.0.2");  // untrusted peer: ignored
  BOOST_TEST(proxies.client_address("127.0.0.1", {}) == "127.0.0.1");
  // Two trusted hops: the inner one's address is skipped.
  BOOST_TEST(proxies.client_address("127.0.0.1", {{"X-Forwarded-For", "1.2.3.4, 203.0.113.7, 10.1.1.1"}}) ==
             "203.0.113.7");
  // Over two fields, in order.
  BOOST_TEST(proxies.client_address(
                 "127.0.0.1", {{"X-Forwarded-For", "203.0.113.7"}, {"x-forwarded-for", "10.0.0.9"}}) == "203.0.113.7");
  // Garbage ends the walk at the last address a trusted hop vouched for.
  BOOST_TEST(proxies.client_address("127.0.0.1", {{"X-Forwarded-For", "1.2.3.4, nonsense"}}) == "127.0.0.1");
  BOOST_TEST(proxies.client_address("127.0.0.1", {{"X-Forwarded-For", "evil\n, 10.0.0.9"}}) == "10.0.0.9");
  // Written as the address reads.
  BOOST_TEST(proxies.client_address("127.0.0.1", {{"X-Forwarded-For", "2001:DB8::0:1"}}) == "2001:db8::1");
}

// The API trusting 127.0.0.1 as HAProxy's address: what origin_ip a ride's key and audit record
// get for one X-Forwarded-For from each peer.
struct TrustingApi {
  TestDatabase db;
  StripeMock stripe;
  std::string token = rr::auth::create_user(db.conn(), "proxied@example.com", "cus_proxied").token;
  ApiProcess process{db, stripe, {{"API_TRUSTED_PROXIES", "127.0.0.1"}}};

  // origin_ip of the key and of the audit record the ride created with this key.
  std::string origins_after_ride(const std::string& source, const std::string& forwarded_for) {
    auto key = new_key();
    RawConnection connection(process.port(), source);
    connection.send("POST /rides HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                    "\r\nIdempotency-Key: " + key + "\r\nX-Forwarded-For: " + forwarded_for +
                    "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
                    std::to_string(RideFixture::kDefaultForm.size()) + "\r\n\r\n" + RideFixture::kDefaultForm);
    auto answer = connection.read_response();
    BOOST_TEST(status_of(answer) == 201, answer);
    return db.scalar("SELECT host(origin_ip) FROM idempotency_keys WHERE idempotency_key = '" + key + "'") + " " +
           db.scalar("SELECT host(origin_ip) FROM audit_records ORDER BY resource_id DESC LIMIT 1");
  }
};

// HAProxy forwards a chunked body's trailer as it came: an X-Forwarded-For there is the client's own
// writing, sent after the body, and must never name the client (nor reach the access log's remote).
BOOST_FIXTURE_TEST_CASE(an_x_forwarded_for_in_a_chunked_trailer_names_nobody, TrustingApi) {
  auto key = new_key();
  const auto& form = RideFixture::kDefaultForm;
  char size[32];
  std::snprintf(size, sizeof size, "%zx", form.size());
  RawConnection connection(process.port());
  connection.send("POST /rides HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nIdempotency-Key: " + key +
                  "\r\nX-Request-Id: trailer-forwarded-for\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n" +
                  size + "\r\n" + form + "\r\n0\r\nX-Forwarded-For: 198.51.100.23\r\n\r\n");
  auto answer = connection.read_response();
  BOOST_TEST(status_of(answer) == 201, answer);
  BOOST_TEST(db.scalar("SELECT host(origin_ip) FROM idempotency_keys WHERE idempotency_key = '" + key + "'") ==
             "127.0.0.1");
  BOOST_REQUIRE(process.wait_for_output("request_id=trailer-forwarded-for ", std::chrono::seconds(3)));
  BOOST_TEST(process.output().find("198.51.100.23") == std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(x_forwarded_for_names_the_client_only_through_a_trusted_proxy, TrustingApi) {
  BOOST_TEST(origins_after_ride("127.0.0.1", "203.0.113.7") == "203.0.113.7 203.0.113.7");
  BOOST_TEST(origins_after_ride("127.0.0.2", "203.0.113.7") == "127.0.0.2 127.0.0.2");
  BOOST_TEST(origins_after_ride("127.0.0.1", "1.2.3.4, 203.0.113.7") == "203.0.113.7 203.0.113.7");
}

BOOST_AUTO_TEST_CASE(an_unreadable_list_is_a_configuration_error_naming_the_variable) {
  std::map<std::string, std::string> env{{"DATABASE_URL", "postgres://u@127.0.0.1:5432/db"},
                                         {"STRIPE_API_KEY", "k"},
                                         {"API_TRUSTED_PROXIES", "10.0.0.0/40"}};
  try {
    rr::api::ApiSettings::from_env(rr::config::Environment::from_map(env));
    BOOST_FAIL("expected a ConfigError");
  } catch (const rr::config::ConfigError& e) {
    BOOST_TEST(e.variable() == "API_TRUSTED_PROXIES");
    BOOST_TEST(e.problem().find("10.0.0.0/40") != std::string::npos, e.problem());
  }
  env.erase("API_TRUSTED_PROXIES");
  BOOST_TEST(rr::api::ApiSettings::from_env(rr::config::Environment::from_map(env)).trusted_proxies.empty());
}

BOOST_AUTO_TEST_SUITE_END()
