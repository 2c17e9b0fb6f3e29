// The rider pages' HTML (the contract's ids, names and roles), as functions of plain values. Every
// value goes through Html, which escapes it (html.hpp). No script anywhere; the only stylesheet is
// kStylesheetPath.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/rides/ride_response.hpp"

namespace rr::web {

inline constexpr std::string_view kStylesheetPath = "/rider.css";

// The booking form's fields, as the rider entered them (or the demo's defaults).
struct BookingForm {
  std::string origin_lat, origin_lon, target_lat, target_lon;
  std::string idempotency_key;  // the hidden key: new at every fresh render, kept to resume
  // San Francisco to Oakland, the demo's ride, with a fresh key.
  static BookingForm fresh();
};

// What a booking page says above its form.
struct Notice {
  enum class Kind { none, declined, try_again, error, in_progress };
  Kind kind = Kind::none;
  std::string message;
};

struct BookingPage {
  std::string email;       // whose session
  std::string csrf_token;  // the session's
  BookingForm form;
  Notice notice;
  // The rider's recent rides, newest first; nothing leaves the list out (an answer to a POST).
  std::optional<std::vector<rides::RideView>> recent_rides;
};

// GET / signed out, and the sign-in form again after a failure (`error`).
std::string sign_in_page(std::string_view csrf_token, std::optional<std::string_view> error = std::nullopt);
// GET / signed in, and the answers of POST /book that show the form again.
std::string booking_page(const BookingPage& page);
// GET /my/rides/{id}.
std::string ride_page(const rides::RideView& ride, std::string_view email, std::string_view csrf_token);
// A page that only says what went wrong (<p id="error" role="alert">), with a link home.
std::string message_page(std::string_view title, std::string_view message);

// "$20.00" for 2000 usd; other currencies as "20.00 EUR".
std::string format_amount(std::int64_t cents, std::string_view currency);

// The stylesheet served at kStylesheetPath.
std::string_view stylesheet();

}  // namespace rr::web
