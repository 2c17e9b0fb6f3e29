// The rider pages over real HTTP against the real rocket-rides-api process, with a
// cookie jar of our own standing in for the browser: sign-in and its CSRF pair, the session cookie's
// attributes and expiry, booking with the page's hidden key (one ride and one charge per key,
// whatever is resubmitted), a decline, an outage and its resumption, bad input, escaping, the
// headers every page carries, other riders' rides, signing out, and the token kept out of pages and
// logs.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <future>
#include <map>
#include <regex>
#include <thread>

#include "common/auth/tokens.hpp"
#include "common/auth/users.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "support/api_process.hpp"
#include "support/ride_fixture.hpp"
#include "support/text.hpp"

using namespace rr::test;
namespace http = rr::http;

namespace {

const std::string kCsp =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'";

using Fields = std::vector<std::pair<std::string, std::string>>;

// The text of the element with this id ("" when there is none).
std::string element_text(const std::string& html, const std::string& id) {
  std::smatch match;
  if (!std::regex_search(html, match, std::regex("id=\"" + id + "\"[^>]*>([^<]*)<"))) return "";
  return match[1];
}

std::vector<std::string> set_cookies(const http::ClientResponse& response) {
  std::vector<std::string> out;
  for (const auto& [name, value] : response.headers) {
    if (http::iequals(name, "Set-Cookie")) out.push_back(value);
  }
  return out;
}

// The Set-Cookie header for cookie `name` ("" when the response sets none).
std::string set_cookie_for(const http::ClientResponse& response, const std::string& name) {
  for (const auto& header : set_cookies(response)) {
    if (header.starts_with(name + "=")) return header;
  }
  return "";
}

// A browser as far as the pages can tell: a cookie jar, and every page it was shown.
struct Browser {
  const ApiProcess& api;
  std::map<std::string, std::string> cookies;
  std::vector<std::string> pages_seen;

  http::ClientResponse get(const std::string& path) { return send({"GET", api.url(path), jar(), "", kTimeout}); }

  http::ClientResponse post(const std::string& path, const Fields& fields) {
    auto headers = jar();
    headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    return send({"POST", api.url(path), headers, http::form_encode(fields), kTimeout});
  }

  // GET / signed out, then the sign-in form posted with `token`.
  http::ClientResponse sign_in(const std::string& token) {
    auto form = get("/");
    BOOST_REQUIRE_EQUAL(form.status, 200);
    return post("/session", {{"token", token}, {"csrf_token", input_value(form.body, "csrf_token")}});
  }

  // The booking form's fields as GET / renders them, coordinates replaced by `overrides`.
  Fields booking_form(const Fields& overrides = {}) {
    auto home = get("/");
    BOOST_REQUIRE_EQUAL(home.status, 200);
    BOOST_REQUIRE(home.body.find("id=\"book\"") != std::string::npos);
    Fields fields;
    for (const char* name : {"origin_lat", "origin_lon", "target_lat", "target_lon", "idempotency_key", "csrf_token"}) {
      fields.emplace_back(name, input_value(home.body, name));
    }
    for (const auto& [name, value] : overrides) {
      for (auto& field : fields) {
        if (field.first == name) field.second = value;
      }
    }
    return fields;
  }

 private:
  static constexpr std::chrono::milliseconds kTimeout{15000};

  std::vector<std::pair<std::string, std::string>> jar() const {
    std::string header;
    for (const auto& [name, value] : cookies) header += (header.empty() ? "" : "; ") + name + "=" + value;
    if (header.empty()) return {};
    return {{"Cookie", header}};
  }

  http::ClientResponse send(const http::ClientRequest& request) {
    auto response = http::send(request);
    for (const auto& header : set_cookies(response)) {
      auto eq = header.find('=');
      auto end = header.find(';');
      std::string name = header.substr(0, eq), value = header.substr(eq + 1, end - eq - 1);
      if (header.find("Max-Age=0") != std::string::npos)
        cookies.erase(name);
      else
        cookies[name] = value;
    }
    pages_seen.push_back(response.body);
    return response;
  }
};

std::string field(const Fields& fields, const std::string& name) {
  for (const auto& [key, value] : fields) {
    if (key == name) return value;
  }
  return "";
}

void check_page_headers(const http::ClientResponse& response) {
  BOOST_TEST(response.header("Content-Security-Policy") == kCsp);
  BOOST_TEST(response.header("Referrer-Policy") == "no-referrer");
  BOOST_TEST(response.header("X-Content-Type-Options") == "nosniff");
  BOOST_TEST(response.header("Cache-Control") == "no-store");
}

struct PagesFixture : ApiFixture {
  Browser browser() { return Browser{*api, {}, {}}; }
  // A browser signed in with `as` (alice's token by default).
  Browser signed_in(const std::string& as = "") {
    Browser b = browser();
    auto answer = b.sign_in(as.empty() ? token : as);
    BOOST_REQUIRE_EQUAL(answer.status, 303);
    return b;
  }
  std::string count(const std::string& table) { return db.scalar("SELECT count(*) FROM " + table); }
  std::string add_user(const std::string& email, const std::string& customer) {
    return rr::auth::create_user(db.conn(), email, customer).token;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(rider_pages, PagesFixture)

BOOST_AUTO_TEST_CASE(signed_out_home_is_the_sign_in_form_with_its_csrf_pair_and_the_page_headers) {
  start_api();
  Browser b = browser();
  auto home = b.get("/");
  BOOST_TEST(home.status == 200);
  BOOST_TEST(home.header("Content-Type") == "text/html; charset=utf-8");
  check_page_headers(home);
  for (const char* part :
       {"<form id=\"sign-in\" method=\"post\" action=\"/session\">", "<input type=\"password\" name=\"token\"",
        "<input type=\"hidden\" name=\"csrf_token\"", "<button type=\"submit\" id=\"sign-in-submit\">"}) {
    BOOST_TEST(home.body.find(part) != std::string::npos, part);
  }
  BOOST_TEST(home.body.find("<script") == std::string::npos);
  auto csrf = input_value(home.body, "csrf_token");
  BOOST_TEST(csrf.size() == 64u);
  BOOST_TEST(set_cookie_for(home, "rr_csrf") ==
             "rr_csrf=" + csrf + "; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict");
  // A second render keeps the browser's token, so another open tab's form stays valid.
  auto again = b.get("/");
  BOOST_TEST(input_value(again.body, "csrf_token") == csrf);
  BOOST_TEST(set_cookie_for(again, "rr_csrf").empty());

  auto css = b.get("/rider.css");
  BOOST_TEST(css.status == 200);
  BOOST_TEST(css.header("Content-Type") == "text/css; charset=utf-8");
  check_page_headers(css);
}

BOOST_AUTO_TEST_CASE(signing_in_sets_a_strict_http_only_session_cookie_whose_hash_alone_is_stored) {
  start_api();
  Browser b = browser();
  auto answer = b.sign_in(token);
  BOOST_TEST(answer.status == 303);
  BOOST_TEST(answer.header("Location") == "/");
  check_page_headers(answer);
  auto session = b.cookies["rr_session"];
  BOOST_REQUIRE_EQUAL(session.size(), 64u);
  BOOST_TEST(set_cookie_for(answer, "rr_session") ==
             "rr_session=" + session + "; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict");
  BOOST_TEST(b.cookies.count("rr_csrf") == 0u);  // the sign-in form's pair is spent
  BOOST_TEST(count("rider_sessions") == "1");
  BOOST_TEST(db.scalar("SELECT encode(token_hash, 'hex') FROM rider_sessions") ==
             rr::auth::to_hex(rr::auth::sha256(session)));
  BOOST_TEST(db.scalar("SELECT count(*) FROM rider_sessions WHERE csrf_token = '" + session + "'") == "0");

  auto home = b.get("/");
  BOOST_TEST(home.status == 200);
  check_page_headers(home);
  for (const char* part :
       {"<form id=\"book\" method=\"post\" action=\"/book\">", "name=\"origin_lat\"", "name=\"origin_lon\"",
        "name=\"target_lat\"", "name=\"target_lon\"", "<input type=\"hidden\" name=\"idempotency_key\"",
        "<button type=\"submit\" id=\"book-submit\">", "<ul id=\"recent-rides\">",
        "<form id=\"sign-out\" method=\"post\" action=\"/session/end\">",
        "<button type=\"submit\" id=\"sign-out-submit\">", "alice@example.com"}) {
    BOOST_TEST(home.body.find(part) != std::string::npos, part);
  }
  BOOST_TEST(input_value(home.body, "origin_lat") == "37.7749");
  // The hidden key is new at every render.
  auto key = input_value(home.body, "idempotency_key");
  BOOST_TEST(key.size() >= 20u);
  BOOST_TEST(input_value(b.get("/").body, "idempotency_key") != key);
}

BOOST_AUTO_TEST_CASE(a_wrong_token_is_401_with_the_form_again_and_writes_nothing) {
  start_api();
  Browser b = browser();
  std::string wrong = rr::auth::generate_token();
  auto answer = b.sign_in(wrong);
  BOOST_TEST(answer.status == 401);
  check_page_headers(answer);
  BOOST_TEST(answer.body.find("<p id=\"error\" role=\"alert\">") != std::string::npos);
  BOOST_TEST(answer.body.find("id=\"sign-in\"") != std::string::npos);
  BOOST_TEST(answer.body.find(wrong) == std::string::npos);
  BOOST_TEST(b.sign_in("not even a token").status == 401);
  BOOST_TEST(b.cookies.count("rr_session") == 0u);
  BOOST_TEST(count("rider_sessions") == "0");
}

BOOST_AUTO_TEST_CASE(a_sign_in_without_its_csrf_pair_is_403_and_writes_nothing) {
  start_api();
  Browser b = browser();
  // No rr_csrf cookie at all (a cross-site form).
  auto no_cookie = b.post("/session", {{"token", token}, {"csrf_token", std::string(64, 'a')}});
  BOOST_TEST(no_cookie.status == 403);
  BOOST_TEST(no_cookie.body.find("<p id=\"error\" role=\"alert\">") != std::string::npos);
  // The cookie, but another value in the form.
  auto form = b.get("/");
  auto csrf = input_value(form.body, "csrf_token");
  std::string other = csrf;
  other[0] = other[0] == 'a' ? 'b' : 'a';
  BOOST_TEST(b.post("/session", {{"token", token}, {"csrf_token", other}}).status == 403);
  BOOST_TEST(b.post("/session", {{"token", token}}).status == 403);
  // The field twice is ambiguous, even when one of them matches.
  BOOST_TEST(b.post("/session", {{"token", token}, {"csrf_token", other}, {"csrf_token", csrf}}).status == 403);
  BOOST_TEST(count("rider_sessions") == "0");
  BOOST_TEST(b.post("/session", {{"token", token}, {"csrf_token", csrf}}).status == 303);
}

BOOST_AUTO_TEST_CASE(cookies_are_secure_when_SESSION_COOKIE_SECURE_is_on) {
  start_api({{"SESSION_COOKIE_SECURE", "on"}});
  Browser b = browser();
  auto form = b.get("/");
  BOOST_TEST(set_cookie_for(form, "rr_csrf").ends_with("; HttpOnly; SameSite=Strict; Secure"));
  auto answer = b.post("/session", {{"token", token}, {"csrf_token", input_value(form.body, "csrf_token")}});
  BOOST_TEST(answer.status == 303);
  BOOST_TEST(
      set_cookie_for(answer, "rr_session").ends_with("; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict; Secure"));
}

BOOST_AUTO_TEST_CASE(a_session_ends_after_SESSION_TTL) {
  start_api({{"SESSION_TTL", "1"}});
  Browser b = signed_in();
  auto home = b.get("/");
  BOOST_TEST(home.body.find("id=\"book\"") != std::string::npos);
  auto form = b.booking_form();
  std::string session = b.cookies["rr_session"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  b.cookies["rr_session"] = session;  // a browser that kept the cookie past its Max-Age
  auto late = b.post("/book", form);
  BOOST_TEST(late.status == 403);
  BOOST_TEST(count("idempotency_keys") == "0");
  auto expired = b.get("/");
  BOOST_TEST(expired.body.find("id=\"sign-in\"") != std::string::npos);
  BOOST_TEST(set_cookie_for(expired, "rr_session").find("Max-Age=0") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(booking_answers_303_to_the_ride_page_and_every_resubmission_of_the_key_to_the_same_ride) {
  start_api();
  Browser b = signed_in();
  auto form = b.booking_form();
  auto first = b.post("/book", form);
  BOOST_TEST(first.status == 303, first.body);
  check_page_headers(first);
  std::string location = first.header("Location");
  BOOST_REQUIRE(location.starts_with("/my/rides/"));
  std::string ride_id = location.substr(std::string("/my/rides/").size());

  auto ride = b.get(location);
  BOOST_TEST(ride.status == 200);
  check_page_headers(ride);
  BOOST_TEST(ride.body.find("<article id=\"ride\" data-ride-id=\"" + ride_id + "\">") != std::string::npos);
  std::string charge = element_text(ride.body, "charge-id");
  BOOST_TEST(charge.starts_with("ch_"), charge);
  BOOST_TEST(element_text(ride.body, "amount") == "$20.00");
  BOOST_TEST(ride.body.find("37.7749") != std::string::npos);
  BOOST_TEST(db.scalar("SELECT stripe_charge_id FROM rides WHERE id = " + ride_id) == charge);

  // A double click, a reload of the POST, Back and submit again: the same key, the same ride.
  for (int i = 0; i < 3; ++i) {
    auto again = b.post("/book", form);
    BOOST_TEST(again.status == 303);
    BOOST_TEST(again.header("Location") == location);
  }
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(stripe.charges() == 1);
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = '" +
                       field(form, "idempotency_key") + "' AND request_path = '/rides'") == "1");
  auto home = b.get("/");
  BOOST_TEST(home.body.find("<li data-ride-id=\"" + ride_id + "\">") != std::string::npos);

  // A fresh form is a new booking.
  auto second = b.post("/book", b.booking_form());
  BOOST_TEST(second.status == 303);
  BOOST_TEST(second.header("Location") != location);
  BOOST_TEST(count("rides") == "2");
  BOOST_TEST(stripe.charges() == 2);
}

BOOST_AUTO_TEST_CASE(two_racing_submissions_of_one_form_make_one_ride_and_one_charge) {
  stripe.configure("{\"latency_ms\":300}");
  start_api();
  Browser b = signed_in();
  auto form = b.booking_form();
  auto racer = std::async(std::launch::async, [&] {
    Browser twin{*api, b.cookies, {}};
    return twin.post("/book", form);
  });
  auto mine = b.post("/book", form);
  auto theirs = racer.get();
  // The loser waits for the winner's result (IDEMPOTENCY_MAX_WAIT) instead of an error: both land
  // on the same ride page.
  BOOST_TEST(mine.status == 303);
  BOOST_TEST(theirs.status == 303);
  BOOST_TEST(mine.header("Location") == theirs.header("Location"));
  auto settled = b.post("/book", form);
  BOOST_TEST(settled.status == 303);
  BOOST_TEST(settled.header("Location") == mine.header("Location"));
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(stripe.charges() == 1);
}

// A booking still running when the longest wait runs out: the page says so and keeps the key, so
// that submitting again lands on the same ride.
BOOST_AUTO_TEST_CASE(a_booking_that_outlasts_the_wait_says_it_is_in_progress_and_keeps_the_key) {
  stripe.configure("{\"latency_ms\":2500}");
  start_api({{"IDEMPOTENCY_MAX_WAIT", "1"}});
  Browser b = signed_in();
  auto form = b.booking_form();
  auto first = std::async(std::launch::async, [&] {
    Browser twin{*api, b.cookies, {}};
    return twin.post("/book", form);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto waited = b.post("/book", form);
  BOOST_TEST(waited.status == 409);
  BOOST_TEST(waited.body.find("<p id=\"in-progress\" role=\"alert\">") != std::string::npos);
  BOOST_TEST(input_value(waited.body, "idempotency_key") == field(form, "idempotency_key"));
  BOOST_TEST(!waited.header("Retry-After").empty());
  auto done = first.get();
  BOOST_TEST(done.status == 303);
  auto again = b.post("/book", form);
  BOOST_TEST(again.status == 303);
  BOOST_TEST(again.header("Location") == done.header("Location"));
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(a_decline_shows_the_stored_message_with_a_fresh_key_and_stays_declined) {
  start_api();
  Browser b = signed_in(add_user("dora@example.com", "cus_declined_dora"));
  auto form = b.booking_form();
  auto declined = b.post("/book", form);
  BOOST_TEST(declined.status == 402);
  check_page_headers(declined);
  std::string stored = db.scalar("SELECT response_body::jsonb->'error'->>'message' FROM idempotency_keys");
  BOOST_TEST(!stored.empty());
  BOOST_TEST(element_text(declined.body, "declined") == stored);
  BOOST_TEST(declined.body.find("<p id=\"declined\" role=\"alert\">") != std::string::npos);
  auto fresh_key = input_value(declined.body, "idempotency_key");
  BOOST_TEST(!fresh_key.empty());
  BOOST_TEST(fresh_key != field(form, "idempotency_key"));
  // The same form again: the key's stored result, not a second attempt.
  auto again = b.post("/book", form);
  BOOST_TEST(again.status == 402);
  BOOST_TEST(element_text(again.body, "declined") == stored);
  BOOST_TEST(count("idempotency_keys") == "1");
  BOOST_TEST(stripe.charges() == 0);
}

BOOST_AUTO_TEST_CASE(an_outage_keeps_the_key_and_resubmitting_the_form_finishes_the_same_booking) {
  start_api();
  Browser b = signed_in();
  auto form = b.booking_form();
  stripe.configure("{\"fail_next\":1}");
  auto outage = b.post("/book", form);
  BOOST_TEST(outage.status == 503);
  check_page_headers(outage);
  BOOST_TEST(outage.body.find("<p id=\"try-again\" role=\"alert\">") != std::string::npos);
  BOOST_TEST(!outage.header("Retry-After").empty());
  auto kept = input_value(outage.body, "idempotency_key");
  BOOST_TEST(kept == field(form, "idempotency_key"));
  BOOST_TEST(input_value(outage.body, "origin_lat") == field(form, "origin_lat"));

  auto resumed = b.post("/book", form);
  BOOST_TEST(resumed.status == 303, resumed.body);
  BOOST_TEST(resumed.header("Location").starts_with("/my/rides/"));
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(count("idempotency_keys") == "1");
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(bad_input_is_422_with_the_apis_message_the_values_entered_and_the_same_key) {
  start_api();
  // The API's own answer to the same coordinates.
  auto api_answer = api->post_ride(token, new_key(), "origin_lat=95&origin_lon=0&target_lat=0&target_lon=0");
  BOOST_REQUIRE_EQUAL(api_answer.status, 422);
  std::smatch match;
  BOOST_REQUIRE(std::regex_search(api_answer.body, match, std::regex("\"message\":\"([^\"]*)\"")));
  std::string api_message = match[1];

  Browser b = signed_in();
  auto form = b.booking_form({{"origin_lat", "95"}});
  auto bad = b.post("/book", form);
  BOOST_TEST(bad.status == 422);
  check_page_headers(bad);
  BOOST_TEST(element_text(bad.body, "error") == api_message);
  BOOST_TEST(bad.body.find("<p id=\"error\" role=\"alert\">") != std::string::npos);
  BOOST_TEST(input_value(bad.body, "origin_lat") == "95");
  BOOST_TEST(input_value(bad.body, "idempotency_key") == field(form, "idempotency_key"));
  BOOST_TEST(count("idempotency_keys") == "0");

  // Corrected and sent with the same key: booked.
  Fields fixed = form;
  for (auto& [name, value] : fixed) {
    if (name == "origin_lat") value = "37.7749";
  }
  BOOST_TEST(b.post("/book", fixed).status == 303);
  BOOST_TEST(count("rides") == "1");
}

BOOST_AUTO_TEST_CASE(every_value_is_escaped) {
  start_api();
  Browser b = signed_in(add_user("<i>eve</i>'\"@example.com", "cus_eve"));
  auto home = b.get("/");
  BOOST_TEST(home.body.find("&lt;i&gt;eve&lt;/i&gt;&#39;&quot;@example.com") != std::string::npos);
  BOOST_TEST(home.body.find("<i>") == std::string::npos);
  auto form = b.booking_form({{"origin_lat", "\"><script>alert(1)</script>"}});
  auto bad = b.post("/book", form);
  BOOST_TEST(bad.status == 422);
  BOOST_TEST(bad.body.find("value=\"&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\"") != std::string::npos);
  BOOST_TEST(bad.body.find("<script") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_post_without_a_session_or_with_another_csrf_token_is_403_and_writes_nothing) {
  start_api();
  Browser b = signed_in();
  auto form = b.booking_form();
  Browser stranger = browser();
  auto no_session = stranger.post("/book", form);
  BOOST_TEST(no_session.status == 403);
  check_page_headers(no_session);
  BOOST_TEST(no_session.body.find("<p id=\"error\" role=\"alert\">") != std::string::npos);

  Fields forged = form;
  for (auto& [name, value] : forged) {
    if (name == "csrf_token") value = std::string(64, '0');
  }
  BOOST_TEST(b.post("/book", forged).status == 403);
  Fields without = form;
  std::erase_if(without, [](const auto& f) { return f.first == "csrf_token"; });
  BOOST_TEST(b.post("/book", without).status == 403);
  // Another rider's session token in the form is not this session's.
  Browser bob = signed_in(add_user("bob@example.com", "cus_bob"));
  BOOST_TEST(bob.post("/book", form).status == 403);
  BOOST_TEST(count("idempotency_keys") == "0");
  BOOST_TEST(count("rides") == "0");
  BOOST_TEST(stripe.charges() == 0);
}

BOOST_AUTO_TEST_CASE(another_riders_ride_and_malformed_ride_paths_are_404_pages) {
  start_api();
  Browser alice = signed_in();
  auto booked = alice.post("/book", alice.booking_form());
  BOOST_REQUIRE_EQUAL(booked.status, 303);
  std::string location = booked.header("Location");
  Browser bob = signed_in(add_user("bob@example.com", "cus_bob"));
  auto theirs = bob.get(location);
  BOOST_TEST(theirs.status == 404);
  check_page_headers(theirs);
  BOOST_TEST(theirs.body.find("data-ride-id") == std::string::npos);
  BOOST_TEST(browser().get(location).status == 404);  // signed out
  for (const char* path : {"/my/rides/abc", "/my/rides/0", "/my/rides/1/x", "/my/rides/99999"}) {
    auto answer = alice.get(path);
    BOOST_TEST(answer.status == 404, path);
    BOOST_TEST(answer.header("Content-Type") == "text/html; charset=utf-8", path);
  }
}

BOOST_AUTO_TEST_CASE(signing_out_deletes_the_session_row_and_expires_the_cookie) {
  start_api();
  Browser b = signed_in();
  std::string session = b.cookies["rr_session"];
  auto csrf = field(b.booking_form(), "csrf_token");
  // Another site cannot sign the rider out: the form's token must be the session's.
  BOOST_TEST(b.post("/session/end", {{"csrf_token", std::string(64, '0')}}).status == 403);
  BOOST_TEST(count("rider_sessions") == "1");

  auto out = b.post("/session/end", {{"csrf_token", csrf}});
  BOOST_TEST(out.status == 303);
  BOOST_TEST(out.header("Location") == "/");
  BOOST_TEST(set_cookie_for(out, "rr_session") == "rr_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
  BOOST_TEST(count("rider_sessions") == "0");
  BOOST_TEST(b.get("/").body.find("id=\"sign-in\"") != std::string::npos);
  // The old cookie, kept by a careless browser, no longer signs anyone in.
  b.cookies["rr_session"] = session;
  BOOST_TEST(b.get("/").body.find("id=\"sign-in\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(signing_in_in_a_loop_keeps_at_most_ten_sessions_and_revoking_the_token_ends_them) {
  start_api();
  std::vector<std::string> sessions;
  for (int i = 0; i < 15; ++i) sessions.push_back(signed_in().cookies["rr_session"]);
  BOOST_TEST(count("rider_sessions") == "10");
  Browser oldest = browser(), newest = browser();
  oldest.cookies["rr_session"] = sessions.front();
  newest.cookies["rr_session"] = sessions.back();
  BOOST_TEST(oldest.get("/").body.find("id=\"sign-in\"") != std::string::npos);
  BOOST_TEST(newest.get("/").body.find("id=\"book\"") != std::string::npos);

  db.scalar("DELETE FROM api_tokens RETURNING 1");
  BOOST_TEST(count("rider_sessions") == "0");
  BOOST_TEST(newest.get("/").body.find("id=\"sign-in\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_hostile_cookie_header_reads_as_no_session) {
  start_api();
  Browser b = signed_in();
  std::string session = b.cookies["rr_session"];
  auto home_with = [&](const std::string& cookie_header) {
    return http::send({"GET", api->url("/"), {{"Cookie", cookie_header}}, "", std::chrono::seconds(10)});
  };
  BOOST_TEST(home_with("rr_session=" + session).body.find("id=\"book\"") != std::string::npos);
  BOOST_TEST(home_with("x=1; rr_session=\"" + session + "\"").body.find("id=\"book\"") != std::string::npos);
  // Twice (a cookie planted beside ours), too long, or one pair too many: no session.
  BOOST_TEST(home_with("rr_session=" + session + "; rr_session=" + session).body.find("id=\"sign-in\"") !=
             std::string::npos);
  BOOST_TEST(home_with("rr_session=" + session + "; pad=" + std::string(9000, 'a')).body.find("id=\"sign-in\"") !=
             std::string::npos);
  std::string many = "rr_session=" + session;
  for (int i = 0; i < 64; ++i) many += "; c" + std::to_string(i) + "=1";
  BOOST_TEST(home_with(many).body.find("id=\"sign-in\"") != std::string::npos);
  BOOST_TEST(home_with("rr_session=" + session.substr(1) + "g").status == 200);
}

BOOST_AUTO_TEST_CASE(the_api_token_never_appears_in_a_page_or_the_log) {
  start_api();
  Browser b = browser();
  BOOST_REQUIRE_EQUAL(b.sign_in(token).status, 303);
  auto form = b.booking_form();
  b.post("/book", form);
  b.post("/book", b.booking_form({{"origin_lat", "95"}}));
  b.get("/");
  b.post("/session/end", {{"csrf_token", field(form, "csrf_token")}});
  Browser wrong = browser();
  wrong.sign_in(token.substr(0, token.size() - 1) + (token.back() == 'a' ? "b" : "a"));
  for (const auto& body : b.pages_seen) BOOST_TEST(body.find(token) == std::string::npos);
  std::string log = api->output();
  BOOST_TEST(log.find("rider signed in") != std::string::npos);
  BOOST_TEST(log.find(token) == std::string::npos);
  BOOST_TEST(log.find(token.substr(3)) == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
