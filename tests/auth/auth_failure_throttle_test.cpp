// Failed authentication bounded per client address: the throttle's windows and table alone, then
// over real HTTP a flood of unknown tokens, of failed sign-ins and of unknown rider session cookies
// from 127.0.0.1 answered at most AUTH_FAILURES_PER_MINUTE times and 429 with Retry-After after
// that, while a valid token from 127.0.0.2, and a valid token the cache knows (or a session this
// API found) from 127.0.0.1, are served, at sign-in too. The database's own count
// (pg_stat_statements, which scripts/test.sh loads) shows that no more lookups than
// AUTH_FAILURES_PER_MINUTE reached it during a flood.
#include "common/auth/auth_failure_throttle.hpp"

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>

#include "common/auth/tokens.hpp"
#include "common/auth/users.hpp"
#include "common/base/random.hpp"
#include "support/api_process.hpp"
#include "support/raw_connection.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using rr::auth::AuthFailureThrottle;
using namespace rr::test;
using namespace std::chrono_literals;

namespace {

constexpr int kFailuresPerMinute = 20;
constexpr int kAttempts = 200;

std::string get_rides(std::uint16_t port, const std::string& token, const std::string& source = "") {
  RawConnection connection(port, source);
  connection.send("GET /rides HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n\r\n");
  return connection.read_response();
}

// POST /rides with this token: the flow endpoint authenticates on its own connection.
std::string post_ride(std::uint16_t port, const std::string& token) {
  const std::string& form = RideFixture::kDefaultForm;
  RawConnection connection(port);
  connection.send(
      "POST /rides HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nIdempotency-Key: " + new_key() +
      "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " + std::to_string(form.size()) +
      "\r\n\r\n" + form);
  return connection.read_response();
}

// POST /session with this token and a matching double-submit CSRF pair.
std::string sign_in(std::uint16_t port, const std::string& token, const std::string& source = "") {
  const std::string csrf(64, 'a');
  std::string body = "token=" + token + "&csrf_token=" + csrf;
  RawConnection connection(port, source);
  connection.send("POST /session HTTP/1.1\r\nHost: x\r\nCookie: rr_csrf=" + csrf +
                  "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body);
  return connection.read_response();
}

// The rr_session cookie a sign-in's answer sets ("" when none).
std::string session_cookie_of(const std::string& answer) {
  const std::string set = "\r\nSet-Cookie: rr_session=";
  auto at = answer.find(set);
  if (at == std::string::npos) return "";
  at += set.size();
  return answer.substr(at, answer.find(';', at) - at);
}

// Every page that looks the rr_session cookie up, one after another as `turn` grows: the home page,
// a ride page, a booking and signing out.
std::string rider_page(std::uint16_t port, const std::string& session, int turn, const std::string& source = "") {
  const std::string cookie = "Cookie: rr_session=" + session + "\r\n";
  const std::string form = "csrf_token=" + std::string(64, 'a');
  auto post = [&](const std::string& path) {
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cookie +
           "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " + std::to_string(form.size()) +
           "\r\n\r\n" + form;
  };
  RawConnection connection(port, source);
  switch (turn % 4) {
    case 0:
      connection.send("GET / HTTP/1.1\r\nHost: x\r\n" + cookie + "\r\n");
      break;
    case 1:
      connection.send("GET /my/rides/1 HTTP/1.1\r\nHost: x\r\n" + cookie + "\r\n");
      break;
    case 2:
      connection.send(post("/book"));
      break;
    default:
      connection.send(post("/session/end"));
      break;
  }
  return connection.read_response();
}

struct Counts {
  int unauthorized = 0, throttled = 0, other = 0;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(auth_failure_throttle)

BOOST_AUTO_TEST_CASE(an_address_is_refused_after_its_failures_until_its_minute_ends) {
  AuthFailureThrottle throttle({.failures_per_minute = 3, .max_addresses = 10});
  auto start = AuthFailureThrottle::Clock::now();
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(!throttle.retry_after("192.0.2.1", start));
    throttle.record_failure("192.0.2.1", start);
  }
  auto refused = throttle.retry_after("192.0.2.1", start + 10s);
  BOOST_REQUIRE(refused);
  BOOST_TEST(*refused == 50);
  BOOST_TEST(!throttle.retry_after("192.0.2.2", start + 10s));  // others are unaffected
  BOOST_TEST(!throttle.retry_after("192.0.2.1", start + 60s));  // a new minute
}

BOOST_AUTO_TEST_CASE(a_full_table_forgets_ended_windows_then_shares_one) {
  AuthFailureThrottle throttle({.failures_per_minute = 2, .max_addresses = 2});
  auto start = AuthFailureThrottle::Clock::now();
  throttle.record_failure("192.0.2.1", start);
  throttle.record_failure("192.0.2.2", start);
  // Full, nothing ended: the third and fourth address share one window.
  throttle.record_failure("192.0.2.3", start);
  throttle.record_failure("192.0.2.4", start);
  BOOST_TEST(throttle.addresses() == 2u);
  BOOST_TEST(throttle.retry_after("192.0.2.5", start).has_value());
  BOOST_TEST(!throttle.retry_after("192.0.2.1", start).has_value());
  // A minute on, the ended windows make room.
  throttle.record_failure("192.0.2.6", start + 61s);
  BOOST_TEST(throttle.addresses() == 1u);
  BOOST_TEST(!throttle.retry_after("192.0.2.7", start + 61s).has_value());
}

// The statements matching `condition` that PostgreSQL ran in this test's database, as
// pg_stat_statements counts them (updated as each statement ends, unlike the cumulative statistics
// views, which backends flush up to seconds later).
std::int64_t statements_run(TestDatabase& db, const std::string& condition) {
  return std::stoll(
      db.scalar("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND (" +
                condition + ")"));
}

// The token lookups: the API's bearer-token query and the sign-in function.
std::int64_t token_lookups(TestDatabase& db) {
  return statements_run(db, "query LIKE '%FROM api_tokens t JOIN users%' OR query LIKE '%rider_session_sign_in(%'");
}

// The session lookups and deletions of the rider pages (never the sign-in function's insert).
std::int64_t session_lookups(TestDatabase& db) { return statements_run(db, "query LIKE '%FROM rider_sessions%'"); }

bool statements_are_counted(TestDatabase& db) {
  try {
    db.scalar("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    db.scalar("SELECT count(*) FROM pg_stat_statements");
    return true;
  } catch (const std::exception& error) {
    BOOST_TEST_MESSAGE(error.what());
    return false;
  }
}

struct ThrottlingApi {
  TestDatabase db;
  bool counted = statements_are_counted(db);
  StripeMock stripe;
  std::string token = rr::auth::create_user(db.conn(), "guessed@example.com", "cus_guessed").token;
  std::string other_token = rr::auth::create_user(db.conn(), "elsewhere@example.com", "cus_elsewhere").token;
  ApiProcess process{db, stripe, {{"AUTH_FAILURES_PER_MINUTE", std::to_string(kFailuresPerMinute)}}};
  std::uint16_t port = process.port();

  Counts count(const std::function<std::string()>& attempt) {
    Counts counts;
    for (int i = 0; i < kAttempts; ++i) {
      auto answer = attempt();
      int status = status_of(answer);
      if (status == 401) {
        ++counts.unauthorized;
      } else if (status == 429) {
        ++counts.throttled;
        BOOST_TEST(std::stoi(header_of(answer, "Retry-After")) >= 1, answer);
      } else {
        ++counts.other;
        BOOST_TEST_MESSAGE(answer);
      }
    }
    return counts;
  }

  // kAttempts failures from 127.0.0.1: AUTH_FAILURES_PER_MINUTE 401s, each one database lookup
  // (pg_stat_statements' count), then 429s with Retry-After and no lookup.
  void expect_flood_bounded(const std::function<std::string()>& attempt) {
    BOOST_REQUIRE_MESSAGE(counted,
                          "start PostgreSQL with shared_preload_libraries=pg_stat_statements "
                          "(scripts/test.sh does)");
    auto lookups_before = token_lookups(db);
    auto counts = count(attempt);
    BOOST_TEST(token_lookups(db) - lookups_before == kFailuresPerMinute);
    BOOST_TEST(counts.unauthorized == kFailuresPerMinute);
    BOOST_TEST(counts.throttled == kAttempts - kFailuresPerMinute);
    BOOST_TEST(counts.other == 0);
  }
};

BOOST_FIXTURE_TEST_CASE(unknown_tokens_from_one_address_meet_429_while_others_are_served, ThrottlingApi) {
  BOOST_TEST(status_of(get_rides(port, token)) == 200);  // cached before the flood
  expect_flood_bounded([&] { return get_rides(port, rr::auth::generate_token()); });
  BOOST_TEST(status_of(get_rides(port, other_token, "127.0.0.2")) == 200);
  // Proven tokens (the cache knows both now) from the throttled address.
  BOOST_TEST(status_of(get_rides(port, token)) == 200);
  BOOST_TEST(status_of(get_rides(port, other_token)) == 200);
}

BOOST_FIXTURE_TEST_CASE(failed_sign_ins_from_one_address_meet_429, ThrottlingApi) {
  expect_flood_bounded([&] { return sign_in(port, rr::auth::generate_token()); });
  BOOST_TEST(status_of(get_rides(port, other_token, "127.0.0.2")) == 200);
}

BOOST_FIXTURE_TEST_CASE(a_token_the_cache_knows_signs_in_from_a_throttled_address, ThrottlingApi) {
  BOOST_TEST(status_of(get_rides(port, token)) == 200);  // the cache knows it now
  expect_flood_bounded([&] { return sign_in(port, rr::auth::generate_token()); });
  BOOST_TEST(status_of(get_rides(port, token)) == 200);  // as a bearer token, served
  auto signed_in = sign_in(port, token);                 // and at sign-in too
  BOOST_TEST(status_of(signed_in) == 303, signed_in);
  // The session it made is proven as its token was: its pages are served from here.
  auto session = session_cookie_of(signed_in);
  BOOST_TEST(status_of(rider_page(port, session, 0)) == 200);
  // A valid token the cache does not know is unproven here, as it would be as a bearer token.
  BOOST_TEST(status_of(sign_in(port, other_token)) == 429);
}

BOOST_FIXTURE_TEST_CASE(unknown_session_cookies_from_one_address_meet_429_while_riders_are_served, ThrottlingApi) {
  BOOST_REQUIRE_MESSAGE(counted, "start PostgreSQL with shared_preload_libraries=pg_stat_statements");
  // Before the flood: a rider signed in from here, and one from elsewhere.
  auto here = session_cookie_of(sign_in(port, token));
  auto elsewhere = session_cookie_of(sign_in(port, other_token, "127.0.0.2"));
  BOOST_REQUIRE(!here.empty());
  BOOST_REQUIRE(!elsewhere.empty());
  BOOST_TEST(status_of(rider_page(port, here, 0)) == 200);
  // And a live session this API has never found (signed in through another API, say).
  std::string unseen = rr::random_hex(32);
  db.scalar("SELECT user_id FROM rider_session_sign_in(sha256('" + unseen + "'::bytea), sha256('" + token +
            "'::bytea), repeat('c', 64), 3600, 10)");

  // Cookies of the right shape that name no session, on every page that looks one up: each is
  // looked up (sign-in page, 404, 403, 303) until the address has failed AUTH_FAILURES_PER_MINUTE
  // times, then it gets the 429 page with Retry-After and the database hears nothing more.
  auto lookups_before = session_lookups(db);
  int answered = 0, throttled = 0;
  for (int i = 0; i < kAttempts; ++i) {
    auto answer = rider_page(port, rr::random_hex(32), i);
    int status = status_of(answer);
    if (status == 429) {
      ++throttled;
      BOOST_TEST(std::stoi(header_of(answer, "Retry-After")) >= 1, answer);
      BOOST_TEST(header_of(answer, "Content-Type").starts_with("text/html"), answer);
    } else {
      ++answered;
      BOOST_TEST((status == 200 || status == 303 || status == 403 || status == 404), answer);
    }
  }
  BOOST_TEST(session_lookups(db) - lookups_before == kFailuresPerMinute);
  BOOST_TEST(answered == kFailuresPerMinute);
  BOOST_TEST(throttled == kAttempts - kFailuresPerMinute);

  // Riders elsewhere are served, and so is a session this API has found from here already.
  BOOST_TEST(status_of(rider_page(port, elsewhere, 0, "127.0.0.2")) == 200);
  BOOST_TEST(status_of(rider_page(port, here, 0)) == 200);
  BOOST_TEST(status_of(rider_page(port, here, 1)) == 404);  // no ride 1 of theirs: the page ran
  // A session never found here is unproven from here until the minute ends, as a valid token the
  // cache does not know is; from elsewhere it is served.
  BOOST_TEST(status_of(rider_page(port, unseen, 0)) == 429);
  BOOST_TEST(status_of(rider_page(port, unseen, 0, "127.0.0.2")) == 200);
}

BOOST_FIXTURE_TEST_CASE(unknown_tokens_on_post_rides_meet_429_and_write_nothing, ThrottlingApi) {
  expect_flood_bounded([&] { return post_ride(port, rr::auth::generate_token()); });
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
  BOOST_TEST(status_of(post_ride(port, other_token)) == 429);  // unproven from the throttled address
  BOOST_TEST(status_of(get_rides(port, other_token, "127.0.0.2")) == 200);
  BOOST_TEST(status_of(post_ride(port, other_token)) == 201);  // proven now: the cache knows it
}

BOOST_AUTO_TEST_SUITE_END()
