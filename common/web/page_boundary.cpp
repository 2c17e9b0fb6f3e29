// Failures as pages.
#include "common/web/page_boundary.hpp"

#include "common/api/outcome_answers.hpp"
#include "common/api_requests/api_error.hpp"
#include "common/web/page_response.hpp"
#include "common/web/pages.hpp"

namespace rr::web {

http::Response failure_page(const std::exception& error) {
  // Classified and logged the API's way (a database outage is a 503, only the unknown a 500).
  auto answer = api::failure_answer(error, "rider-page");
  std::string message;
  if (const auto* api_error = dynamic_cast<const api::ApiError*>(&error)) {
    message = api_error->what();
  } else if (answer.status == 503) {
    message = "Rocket Rides is busy or briefly unavailable; try again in a moment.";
  } else {
    message = "Something went wrong on our side; try again.";
  }
  // Busy, briefly down, or refused for a while (429): the same request later will do.
  bool later = answer.status == 503 || answer.status == 429;
  auto response = page(answer.status, message_page(later ? "Try again" : "Error", message));
  if (auto retry_after = answer.header("Retry-After")) response.with_header("Retry-After", std::string(*retry_after));
  return response;
}

}  // namespace rr::web
