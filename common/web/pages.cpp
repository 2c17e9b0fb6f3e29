// The rider pages' templates.
#include "common/web/pages.hpp"

#include "common/base/random.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/web/html.hpp"

namespace rr::web {
namespace {

Html document(std::string_view title, const Html& main) {
  Html html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"_markup
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"_markup << title
       << " · Rocket Rides</title>\n<link rel=\"stylesheet\" href=\""_markup << kStylesheetPath
       << "\">\n</head>\n<body>\n<header><h1>Rocket Rides</h1></header>\n<main>\n"_markup << main
       << "</main>\n</body>\n</html>\n"_markup;
  return html;
}

Html hidden(std::string_view name, std::string_view value) {
  Html html;
  html << "<input type=\"hidden\" name=\""_markup << name << "\" value=\""_markup << value << "\">\n"_markup;
  return html;
}

Html sign_out_form(std::string_view email, std::string_view csrf_token) {
  Html html;
  html << "<form id=\"sign-out\" method=\"post\" action=\"/session/end\">\n<span class=\"who\">Signed in as "_markup
       << email << "</span>\n"_markup << hidden("csrf_token", csrf_token)
       << "<button type=\"submit\" id=\"sign-out-submit\">Sign out</button>\n</form>\n"_markup;
  return html;
}

Html coordinate_input(std::string_view name, std::string_view label, std::string_view value) {
  Html html;
  html << "<label>"_markup << label << " <input type=\"text\" inputmode=\"decimal\" name=\""_markup << name
       << "\" value=\""_markup << value << "\" required></label>\n"_markup;
  return html;
}

Html notice(const Notice& notice) {
  Html html;
  switch (notice.kind) {
    case Notice::Kind::none:
      break;
    case Notice::Kind::declined:
      html << "<p id=\"declined\" role=\"alert\">"_markup << notice.message << "</p>\n"_markup;
      break;
    case Notice::Kind::try_again:
      html << "<p id=\"try-again\" role=\"alert\">"_markup << notice.message << "</p>\n"_markup;
      break;
    case Notice::Kind::error:
      html << "<p id=\"error\" role=\"alert\">"_markup << notice.message << "</p>\n"_markup;
      break;
    case Notice::Kind::in_progress:
      html << "<p id=\"in-progress\" role=\"alert\">"_markup << notice.message << "</p>\n"_markup;
      break;
  }
  return html;
}

Html ride_link(const rides::RideView& ride) {
  Html html;
  html << "<li data-ride-id=\""_markup << ride.id << "\"><a href=\"/my/rides/"_markup << ride.id << "\">Ride "_markup
       << ride.id << "</a> <time>"_markup << ride.created_at << "</time> "_markup
       << (ride.cancelled_at       ? "cancelled"
           : ride.stripe_charge_id ? "charged"
                                   : "not charged")
       << "</li>\n"_markup;
  return html;
}

}  // namespace

BookingForm BookingForm::fresh() { return {"37.7749", "-122.4194", "37.8044", "-122.2712", "page-" + random_uuid()}; }

std::string format_amount(std::int64_t cents, std::string_view currency) {
  std::string digits = std::to_string(cents / 100) + "." + (cents % 100 < 10 ? "0" : "") + std::to_string(cents % 100);
  if (currency == "usd") return "$" + digits;
  std::string upper(currency);
  for (auto& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return digits + " " + upper;
}

std::string sign_in_page(std::string_view csrf_token, std::optional<std::string_view> error) {
  Html main;
  main << "<h2>Sign in</h2>\n"_markup;
  if (error) main << "<p id=\"error\" role=\"alert\">"_markup << *error << "</p>\n"_markup;
  main
      << "<form id=\"sign-in\" method=\"post\" action=\"/session\">\n"_markup
      << "<label>Your API token <input type=\"password\" name=\"token\" autocomplete=\"off\" required></label>\n"_markup
      << hidden("csrf_token", csrf_token)
      << "<button type=\"submit\" id=\"sign-in-submit\">Sign in</button>\n</form>\n"_markup;
  return document("Sign in", main).str();
}

std::string booking_page(const BookingPage& page) {
  Html main;
  main << sign_out_form(page.email, page.csrf_token) << "<h2>Book a ride</h2>\n"_markup << notice(page.notice)
       << "<form id=\"book\" method=\"post\" action=\"/book\">\n"_markup
       << coordinate_input("origin_lat", "From latitude", page.form.origin_lat)
       << coordinate_input("origin_lon", "From longitude", page.form.origin_lon)
       << coordinate_input("target_lat", "To latitude", page.form.target_lat)
       << coordinate_input("target_lon", "To longitude", page.form.target_lon)
       << hidden("idempotency_key", page.form.idempotency_key) << hidden("csrf_token", page.csrf_token)
       << "<button type=\"submit\" id=\"book-submit\">Book and pay</button>\n</form>\n"_markup;
  if (page.recent_rides) {
    main << "<h2>Your recent rides</h2>\n<ul id=\"recent-rides\">\n"_markup;
    for (const auto& ride : *page.recent_rides) main << ride_link(ride);
    main << "</ul>\n"_markup;
  }
  return document("Book a ride", main).str();
}

std::string ride_page(const rides::RideView& ride, std::string_view email, std::string_view csrf_token) {
  Html main;
  main << sign_out_form(email, csrf_token) << "<article id=\"ride\" data-ride-id=\""_markup << ride.id
       << "\">\n<h2>Ride "_markup << ride.id << "</h2>\n<dl>\n"_markup
       << "<dt>From</dt><dd><span id=\"origin\">"_markup << ride.origin_lat << ", "_markup << ride.origin_lon
       << "</span></dd>\n<dt>To</dt><dd><span id=\"target\">"_markup << ride.target_lat << ", "_markup
       << ride.target_lon << "</span></dd>\n<dt>Booked</dt><dd><time>"_markup << ride.created_at
       << "</time></dd>\n<dt>Fare</dt><dd><span id=\"amount\">"_markup
       << format_amount(rides::kRideAmountCents, rides::kRideCurrency) << "</span></dd>\n<dt>Charge</dt><dd>"_markup;
  if (ride.stripe_charge_id) {
    main << "<span id=\"charge-id\">"_markup << *ride.stripe_charge_id << "</span>"_markup;
  } else {
    main << "<span id=\"not-charged\">not charged</span>"_markup;
  }
  main << "</dd>\n"_markup;
  if (ride.cancelled_at) {
    main << "<dt>Cancelled</dt><dd><time id=\"cancelled-at\">"_markup << *ride.cancelled_at << "</time>"_markup;
    if (ride.stripe_refund_id)
      main << " refund <span id=\"refund-id\">"_markup << *ride.stripe_refund_id << "</span>"_markup;
    main << "</dd>\n"_markup;
  }
  main << "</dl>\n</article>\n<p><a href=\"/\">Book another ride</a></p>\n"_markup;
  return document("Ride " + std::to_string(ride.id), main).str();
}

std::string message_page(std::string_view title, std::string_view message) {
  Html main;
  main << "<h2>"_markup << title << "</h2>\n<p id=\"error\" role=\"alert\">"_markup << message
       << "</p>\n<p><a href=\"/\">Back to Rocket Rides</a></p>\n"_markup;
  return document(title, main).str();
}

std::string_view stylesheet() {
  return R"css(body { font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
header h1 { font-size: 1.5rem; color: #5b2bd6; }
form { margin: 1rem 0; }
label { display: block; margin: 0.5rem 0; }
input[type="text"], input[type="password"] { width: 12rem; padding: 0.3rem; }
button { padding: 0.5rem 1.2rem; background: #5b2bd6; color: white; border: 0; border-radius: 4px; cursor: pointer; }
#sign-out { display: flex; gap: 1rem; align-items: center; justify-content: flex-end; }
#sign-out button { background: #666; padding: 0.3rem 0.8rem; }
[role="alert"] { padding: 0.6rem; border-radius: 4px; background: #fdecea; color: #8a1c12; }
#in-progress, #try-again { background: #fff6e0; color: #6b4e00; }
dl { display: grid; grid-template-columns: 8rem 1fr; gap: 0.3rem; }
dt { font-weight: 600; }
#recent-rides li { margin: 0.2rem 0; }
)css";
}

}  // namespace rr::web
