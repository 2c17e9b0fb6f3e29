// Booking from the page: session, CSRF, key and parameters checked in that order, then the flow.
#include "common/web/book_endpoint.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <stdexcept>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/web/csrf.hpp"
#include "common/web/page_boundary.hpp"
#include "common/web/page_form.hpp"
#include "common/web/page_response.hpp"
#include "common/web/pages.hpp"

namespace rr::web {
namespace {

const flows::RegisteredFlow& create_ride_flow() {
  auto found = flows::find_flow("POST", "/rides");
  if (!found) throw std::logic_error("POST /rides is not a registered flow");
  return *found->flow;
}

// The hidden key, checked by the same rules as the Idempotency-Key header.
std::optional<std::string> valid_key(const std::string& key) {
  http::Request as_header;
  as_header.headers.emplace_back("Idempotency-Key", key);
  try {
    return api::parse_idempotency_key(as_header);
  } catch (const api::ApiError&) {
    return std::nullopt;
  }
}

BookingForm entered(const PageForm& form, std::string key) {
  return {form.value_or_empty("origin_lat"), form.value_or_empty("origin_lon"), form.value_or_empty("target_lat"),
          form.value_or_empty("target_lon"), std::move(key)};
}

// A stored result's JSON body (ours: the 201 of common/rides/ride_response.hpp, the error body of
// common/base/error_body.hpp).
rapidjson::Document parse_body(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) throw std::runtime_error("a stored result is not a JSON object");
  return doc;
}

std::int64_t created_ride_id(const std::string& body) {
  auto doc = parse_body(body);
  auto ride = doc.FindMember("ride");
  if (ride == doc.MemberEnd() || !ride->value.IsObject()) throw std::runtime_error("a stored 201 has no ride");
  auto id = ride->value.FindMember("id");
  if (id == ride->value.MemberEnd() || !id->value.IsInt64()) throw std::runtime_error("a stored ride has no id");
  return id->value.GetInt64();
}

std::string error_message(const std::string& body) {
  auto doc = parse_body(body);
  auto error = doc.FindMember("error");
  if (error != doc.MemberEnd() && error->value.IsObject()) {
    auto message = error->value.FindMember("message");
    if (message != error->value.MemberEnd() && message->value.IsString()) return message->value.GetString();
  }
  return "The booking failed.";
}

http::Response forbidden(std::string_view message) { return page(403, message_page("Forbidden", message)); }

}  // namespace

BookEndpoint::BookEndpoint(SignedInRiders& riders, api::FlowEndpoint& flows)
    : riders_(riders), flows_(flows), ride_flow_(create_ride_flow()) {}

http::Response BookEndpoint::handle(const http::Request& request, const flows::PathArguments&) {
  return within_page_boundary([&] {
    auto rider = riders_.admit(request);
    if (!rider) return forbidden("You are not signed in, or your session has expired. Sign in and book again.");
    const RiderSession& session = rider->session;
    auto form = PageForm::parse(request);
    if (!form || !csrf_matches(session.csrf_token, form->value_or_empty("csrf_token"))) {
      return forbidden("This form has expired. Go back to the booking page and book again.");
    }
    auto answer = [&](int status, BookingForm shown_form, Notice notice) {
      return page(status,
                  booking_page({session.user.email, session.csrf_token, std::move(shown_form), std::move(notice), {}}));
    };

    auto key = valid_key(form->value_or_empty("idempotency_key"));
    if (!key) {
      return answer(422, entered(*form, BookingForm::fresh().idempotency_key),
                    {Notice::Kind::error, "This form could not be read. Check the ride and book again."});
    }
    std::string params_json;
    try {
      params_json = api::read_ride_params(request, {});
    } catch (const api::ApiError& e) {
      return answer(422, entered(*form, *key), {Notice::Kind::error, e.what()});
    }

    // Waits for a key in flight as "Prefer: wait=IDEMPOTENCY_MAX_WAIT" would (a person's second
    // click must land on the same ride, not on an error): a deferral goes back to the server as it
    // is, keeping the rider's in-flight place, and the server parks the request and calls this
    // handler again when the first run ends.
    http::Response result = flows_.run_for_user(session.user, ride_flow_, std::string(ride_flow_.path_template), *key,
                                                std::move(params_json), request, std::chrono::seconds::max());
    if (result.deferral) return http::keeping_while_parked(std::move(result), rider->slot);
    auto retry_after = [&](http::Response response) {
      response.with_header("Retry-After", std::string(result.header("Retry-After").value_or("1")));
      return response;
    };
    if (result.status == 503) {
      return retry_after(answer(503, entered(*form, *key),
                                {Notice::Kind::try_again,
                                 "We could not reach the payment provider, and nothing was charged twice. Submit "
                                 "the same form again to finish this booking."}));
    }
    // Still in flight when the longest wait ran out, or the rider already holds as many waits as
    // anyone may (429 from the API's side): either way, the same form again in a moment.
    if (result.status == 409 || result.status == 429) {
      return retry_after(answer(409, entered(*form, *key),
                                {Notice::Kind::in_progress,
                                 "This booking is still being processed. Submit the same form again in a moment."}));
    }
    if (result.status == 422) {  // the key was used for another ride: these values need a key of their own
      return answer(
          422, entered(*form, BookingForm::fresh().idempotency_key),
          {Notice::Kind::error, "This form was already used to book a different ride. Check the ride and book again."});
    }
    if (result.status == 201) return see_other("/my/rides/" + std::to_string(created_ride_id(result.body)));
    if (result.status == 402) {
      return answer(402, BookingForm::fresh(), {Notice::Kind::declined, error_message(result.body)});
    }
    return page(result.status, message_page("Booking failed", error_message(result.body)));
  });
}

}  // namespace rr::web
