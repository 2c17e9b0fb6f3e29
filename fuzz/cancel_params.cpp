// POST /rides/{id}/cancel's parameter reader (read_cancel_params, common/api_requests/): the ride
// from the path, an optional reason from a form or JSON body, to the canonical JSON stored on the
// key (common/rides/cancel_params.*). Input: the path's id on the first line, the Content-Type on
// the second (empty: none), then the body.
//
// Properties: a refusal is 400, 404, 415 or 422; an accepted reason is printable UTF-8 of at most
// 500 bytes and, from JSON, was a JSON string (by an independent reader, Boost.JSON); the stored
// JSON is canonical (cancel_params_from_json and to_json give it back) and the same request sent
// again from it, as JSON or as a form, stores the same.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/base/utf8.hpp"
#include "common/http/form.hpp"
#include "common/http/message.hpp"
#include "common/rides/cancel_params.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"
#include "fuzz/support/reference_json.hpp"

namespace {

rr::http::Request request_of(std::string_view content_type, std::string body) {
  rr::http::Request request;
  request.method = "POST";
  if (!content_type.empty()) request.headers.emplace_back("Content-Type", std::string(content_type));
  request.body = std::move(body);
  return request;
}

bool is_printable(std::string_view text) {
  while (!text.empty()) {
    auto length = rr::utf8::sequence_length(text);
    auto byte = static_cast<unsigned char>(text.front());
    if (length == 1 && (byte < 0x20 || byte == 0x7f)) return false;
    if (rr::utf8::is_c1_control(text.substr(0, length))) return false;
    text.remove_prefix(length);
  }
  return true;
}

std::string stored_from(const rr::http::Request& request, const std::string& ride_id) {
  return rr::api::read_cancel_params(request, {ride_id});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  std::string ride_id(input.line());
  std::string_view content_type = input.line();
  auto request = request_of(content_type, std::string(input.rest()));
  std::string stored;
  try {
    stored = stored_from(request, ride_id);
  } catch (const rr::api::ApiError& error) {
    FUZZ_CHECK(error.status == 400 || error.status == 404 || error.status == 415 || error.status == 422);
    FUZZ_CHECK(*error.what() != '\0');
    return 0;
  }

  auto params = rr::rides::cancel_params_from_json(stored);
  FUZZ_CHECK(params.has_value());
  FUZZ_CHECK(rr::rides::to_json(*params) == stored);
  FUZZ_CHECK(params->ride_id > 0);
  if (params->reason) {
    FUZZ_CHECK(params->reason->size() <= rr::rides::kMaxCancelReasonBytes);
    FUZZ_CHECK(rr::utf8::is_valid(*params->reason));
    FUZZ_CHECK(is_printable(*params->reason));
    if (rr::api::body_format(request) == rr::api::BodyFormat::json) {
      auto reference = rr::fuzz::reference_json(request.body);
      if (!reference.undecided()) {
        FUZZ_CHECK(reference.value && reference.value->is_object());
        const auto* reason = reference.value->get_object().if_contains("reason");
        FUZZ_CHECK(reason && reason->is_string());
        FUZZ_CHECK(std::string_view(reason->get_string().data(), reason->get_string().size()) == *params->reason);
      }
    }
  }

  // The same cancellation sent again from what was stored, by its canonical id and as either
  // encoding, stores the same text.
  std::string canonical_id = std::to_string(params->ride_id);
  FUZZ_CHECK(stored_from(request_of("application/json", stored), canonical_id) == stored);
  std::vector<std::pair<std::string, std::string>> form;
  if (params->reason) form.emplace_back("reason", *params->reason);
  FUZZ_CHECK(stored_from(request_of("", rr::http::form_encode(form)), canonical_id) == stored);
  return 0;
}
