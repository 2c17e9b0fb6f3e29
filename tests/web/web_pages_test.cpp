// The rider pages' pure parts without a socket or a database: escaping, the Cookie header's strict
// and bounded reading, Set-Cookie, CSRF comparison and the templates' escaping of every value.
#include <boost/test/unit_test.hpp>

#include "common/web/cookies.hpp"
#include "common/web/csrf.hpp"
#include "common/web/html.hpp"
#include "common/web/pages.hpp"

namespace web = rr::web;
namespace http = rr::http;
using web::operator""_markup;

namespace {

http::Request with_cookies(std::vector<std::string> headers) {
  http::Request request;
  for (auto& header : headers) request.headers.emplace_back("Cookie", std::move(header));
  return request;
}

std::optional<std::string> session_in(const std::string& header) {
  return web::cookie_value(with_cookies({header}), "rr_session");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(web_pages)

BOOST_AUTO_TEST_CASE(escape_replaces_the_five_special_characters_and_keeps_the_rest) {
  BOOST_TEST(web::escape("<a href=\"x\" title='y'>&amp;</a>") ==
             "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  BOOST_TEST(web::escape("Zürich 37.7749") == "Zürich 37.7749");
}

BOOST_AUTO_TEST_CASE(html_escapes_every_value_and_passes_only_markup_literals) {
  web::Html html;
  std::string value = "<script>";
  html << "<p title=\""_markup << value << "\">"_markup
       << "<b>" << std::int64_t{42} << "</p>"_markup;
  BOOST_TEST(html.str() == "<p title=\"&lt;script&gt;\">&lt;b&gt;42</p>");
}

BOOST_AUTO_TEST_CASE(templates_escape_what_they_are_given) {
  auto page = web::message_page("<t>", "\"><script>x</script>");
  BOOST_TEST(page.find("<script") == std::string::npos);
  BOOST_TEST(page.find("&quot;&gt;&lt;script&gt;x&lt;/script&gt;") != std::string::npos);
  web::BookingPage booking{"a<b@example.com", "c\"srf", web::BookingForm::fresh(), {}, std::nullopt};
  booking.form.origin_lat = "1\" onfocus=\"x";
  auto html = web::booking_page(booking);
  BOOST_TEST(html.find("value=\"1&quot; onfocus=&quot;x\"") != std::string::npos);
  BOOST_TEST(html.find("a&lt;b@example.com") != std::string::npos);
  BOOST_TEST(html.find("recent-rides") == std::string::npos);  // left out when not given
}

BOOST_AUTO_TEST_CASE(fresh_forms_carry_a_new_valid_key_each) {
  auto a = web::BookingForm::fresh(), b = web::BookingForm::fresh();
  BOOST_TEST(a.idempotency_key != b.idempotency_key);
  BOOST_TEST(a.idempotency_key.size() >= 20u);
  BOOST_TEST(a.idempotency_key.size() <= 255u);
}

BOOST_AUTO_TEST_CASE(amounts_are_written_in_their_currency) {
  BOOST_TEST(web::format_amount(2000, "usd") == "$20.00");
  BOOST_TEST(web::format_amount(1905, "usd") == "$19.05");
  BOOST_TEST(web::format_amount(7, "eur") == "0.07 EUR");
}

BOOST_AUTO_TEST_CASE(a_cookie_is_read_by_its_exact_name_among_others) {
  BOOST_TEST(session_in("rr_session=abc").value() == "abc");
  BOOST_TEST(session_in("a=1; rr_session=abc; b=2").value() == "abc");
  BOOST_TEST(session_in("a=1;rr_session=abc").value() == "abc");
  BOOST_TEST(session_in("rr_session=\"abc\"").value() == "abc");
  BOOST_TEST(!session_in("rr_session_x=abc").has_value());
  BOOST_TEST(!session_in("xrr_session=abc").has_value());
  BOOST_TEST(!web::cookie_value(http::Request{}, "rr_session").has_value());
}

BOOST_AUTO_TEST_CASE(malformed_pairs_are_skipped_and_a_malformed_value_of_ours_is_absent) {
  BOOST_TEST(session_in("garbage; rr_session=abc; =x; ;;").value() == "abc");
  BOOST_TEST(!session_in("rr_session=a b").has_value());
  BOOST_TEST(!session_in("rr_session=a\\b").has_value());
  BOOST_TEST(!session_in("rr_session=a,b").has_value());
}

BOOST_AUTO_TEST_CASE(a_name_twice_two_cookie_headers_or_too_much_text_read_as_no_cookie) {
  BOOST_TEST(!session_in("rr_session=abc; rr_session=abc").has_value());
  BOOST_TEST(!session_in("rr_session=abc; rr_session=def").has_value());
  BOOST_TEST(!web::cookie_value(with_cookies({"rr_session=abc", "x=1"}), "rr_session").has_value());
  BOOST_TEST(!session_in("rr_session=abc; x=" + std::string(web::kMaxCookieHeaderBytes, 'a')).has_value());
  std::string many = "rr_session=abc";
  for (std::size_t i = 1; i < web::kMaxCookies; ++i) many += "; c" + std::to_string(i) + "=1";
  BOOST_TEST(session_in(many).value() == "abc");  // exactly at the bound
  BOOST_TEST(!session_in(many + "; one=more").has_value());
}

BOOST_AUTO_TEST_CASE(set_cookie_is_http_only_strict_and_secure_on_request) {
  BOOST_TEST(web::set_cookie("rr_session", "v", {std::chrono::seconds(60), false}) ==
             "rr_session=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict");
  BOOST_TEST(web::set_cookie("rr_session", "", {std::chrono::seconds(0), true}) ==
             "rr_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure");
}

BOOST_AUTO_TEST_CASE(csrf_tokens_match_only_themselves_in_their_own_shape) {
  auto token = web::new_csrf_token();
  BOOST_TEST(token.size() == 64u);
  BOOST_TEST(web::new_csrf_token() != token);
  BOOST_TEST(web::csrf_matches(token, token));
  std::string other = token;
  other[63] = other[63] == '0' ? '1' : '0';
  BOOST_TEST(!web::csrf_matches(token, other));
  BOOST_TEST(!web::csrf_matches(token, ""));
  BOOST_TEST(!web::csrf_matches("", ""));
  BOOST_TEST(!web::csrf_matches("ZZ", "ZZ"));
  BOOST_TEST(!web::csrf_matches(token, token.substr(0, 32)));
}

BOOST_AUTO_TEST_SUITE_END()
