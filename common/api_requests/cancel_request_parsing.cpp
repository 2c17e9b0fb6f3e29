// POST /rides/{id}/cancel's parameters: the ride from the path, an optional reason from the body.
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/page_query.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/api_requests/strict_json.hpp"
#include "common/base/utf8.hpp"
#include "common/http/form.hpp"
#include "common/rides/cancel_params.hpp"

namespace rr::api {
namespace {

ApiError invalid_reason(const std::string& problem) {
  return ApiError(422, "invalid_request_error", "Parameter reason " + problem + ".");
}

// Printable text: valid UTF-8 without C0 or C1 controls or DEL, at most 500 bytes.
std::string checked_reason(std::string reason) {
  if (reason.size() > rides::kMaxCancelReasonBytes) throw invalid_reason("must be at most 500 bytes");
  if (!utf8::is_valid(reason)) throw invalid_reason("must be UTF-8 text");
  std::string_view rest = reason;
  while (!rest.empty()) {
    auto length = utf8::sequence_length(rest);
    auto byte = static_cast<unsigned char>(rest.front());
    if ((length == 1 && (byte < 0x20 || byte == 0x7f)) || utf8::is_c1_control(rest.substr(0, length))) {
      throw invalid_reason("must be printable text");
    }
    rest.remove_prefix(length);
  }
  return reason;
}

std::optional<std::string> reason_from_form(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (!http::form_decode(body, fields))
    throw ApiError(400, "invalid_request_error", "The form-encoded body is malformed.");
  std::optional<std::string> reason;
  for (auto& [name, value] : fields) {
    if (name != "reason") continue;
    if (reason) throw invalid_reason("is given more than once");
    reason = checked_reason(std::move(value));
  }
  return reason;
}

// A string or nothing: a number, though the reader keeps its text, is not a reason.
std::optional<std::string> reason_from_json(const std::string& body) {
  JsonObject object = parse_strict_json_object(body);
  const JsonMember* reason = object.find("reason");
  if (!reason || reason->kind == JsonKind::null) return std::nullopt;
  if (reason->kind != JsonKind::string) throw invalid_reason("must be a string");
  return checked_reason(reason->text);
}

}  // namespace

std::string read_cancel_params(const http::Request& request, const std::vector<std::string>& path_arguments) {
  rides::CancelParams params;
  params.ride_id = parse_ride_id(path_arguments.empty() ? std::string_view() : std::string_view(path_arguments[0]));
  auto format = body_format(request);
  if (!request.body.empty()) {
    params.reason = format == BodyFormat::form ? reason_from_form(request.body) : reason_from_json(request.body);
  }
  return rides::to_json(params);
}

}  // namespace rr::api
