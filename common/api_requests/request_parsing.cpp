// Header, form and JSON parsing for the rides API.
#include "common/api_requests/request_parsing.hpp"

#include <map>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/strict_json.hpp"
#include "common/auth/tokens.hpp"
#include "common/config/environment.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "common/http/structured_string.hpp"

namespace rr::api {
namespace {

const char* const kParamNames[] = {"origin_lat", "origin_lon", "target_lat", "target_lon"};

ApiError invalid_param(const std::string& name, const std::string& problem) {
  return ApiError(422, "invalid_request_error", "Parameter " + name + " " + problem + ".");
}

double checked_coordinate(const std::string& name, double value) {
  bool latitude = name.ends_with("_lat");
  if (latitude ? !rides::valid_latitude(value) : !rides::valid_longitude(value)) {
    throw invalid_param(
        name, latitude ? "must be a latitude between -90 and 90" : "must be a longitude between -180 and 180");
  }
  return value;
}

// The one rule for a coordinate's text, whether it came in a form field, a JSON string or a JSON
// number: exactly [-+]digits[.digits] (so no "1." or ".5", no exponent), finite, in range.
double coordinate_from_text(const std::string& name, const std::string& text) {
  if (text.empty()) throw invalid_param(name, "is empty");
  auto value = config::parse_plain_decimal(text);
  if (!value) throw invalid_param(name, "must be a finite decimal number");
  return checked_coordinate(name, *value);
}

std::string_view media_type(std::string_view content_type) {
  auto semi = content_type.find(';');
  auto type = content_type.substr(0, semi);
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  return type;
}

rides::RideParams from_form(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (!http::form_decode(body, fields)) {
    throw ApiError(400, "invalid_request_error", "The form-encoded body is malformed.");
  }
  std::map<std::string, std::string> values;
  for (auto& [name, value] : fields) {
    for (const char* wanted : kParamNames) {
      if (name == wanted && !values.emplace(name, value).second) {
        throw invalid_param(name, "is given more than once");
      }
    }
  }
  double out[4];
  for (int i = 0; i < 4; ++i) {
    auto it = values.find(kParamNames[i]);
    if (it == values.end()) throw invalid_param(kParamNames[i], "is required");
    out[i] = coordinate_from_text(kParamNames[i], it->second);
  }
  return {out[0], out[1], out[2], out[3]};
}

rides::RideParams from_json(const std::string& body) {
  JsonObject object = parse_strict_json_object(body);
  double out[4];
  for (int i = 0; i < 4; ++i) {
    std::string name = kParamNames[i];
    const JsonMember* member = object.find(name);
    if (!member || member->kind == JsonKind::null) throw invalid_param(name, "is required");
    // A number keeps its text, so a JSON number and a JSON string meet the form's rule.
    if (member->kind != JsonKind::number && member->kind != JsonKind::string) {
      throw invalid_param(name, "must be a finite decimal number");
    }
    out[i] = coordinate_from_text(name, member->text);
  }
  return {out[0], out[1], out[2], out[3]};
}

}  // namespace

std::string parse_bearer_token(const http::Request& request) {
  if (request.has_repeated_header("Authorization")) {
    throw ApiError(401, "authentication_error", "Send exactly one Authorization header.");
  }
  auto header = request.header("Authorization");
  if (!header || header->empty()) {
    throw ApiError(401, "authentication_error", "Authorization: Bearer <token> is required.");
  }
  std::string_view value = *header;
  if (value.size() < 7 || !http::iequals(value.substr(0, 7), "Bearer ")) {
    throw ApiError(401, "authentication_error", "The Authorization header must use the Bearer scheme.");
  }
  value.remove_prefix(7);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return std::string(value);
}

void require_token_form(const http::Request& request) {
  if (!auth::looks_like_token(parse_bearer_token(request))) {
    throw ApiError(401, "authentication_error", "The bearer token is not valid.");
  }
}

std::string parse_idempotency_key(const http::Request& request) {
  if (request.has_repeated_header("Idempotency-Key")) {
    throw ApiError(400, "invalid_request_error", "Send exactly one Idempotency-Key header.");
  }
  auto header = request.header("Idempotency-Key");
  if (!header || header->empty()) {
    throw ApiError(400, "invalid_request_error", "An Idempotency-Key header is required.");
  }
  std::string key;
  std::string_view raw = *header;
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') {
    auto unquoted = http::parse_sf_string(raw);
    if (!unquoted) {
      throw ApiError(400, "invalid_request_error",
                     "The quoted Idempotency-Key is not an RFC 8941 string: printable ASCII in one pair of quotes, "
                     "with only \\\" and \\\\ escaped.");
    }
    key = std::move(*unquoted);
  } else {
    key = std::string(raw);
  }
  // Whitespace is printable ASCII, but a key of nothing else (bare, or quoted as "" or "   ") is no
  // key at all: a client whose key variable came out empty must not share one with every other.
  if (key.find_first_not_of(" \t") == std::string::npos) {
    throw ApiError(400, "invalid_request_error", "The Idempotency-Key must not be blank.");
  }
  // A proxy joins repeated headers with commas (RFC 9110 section 5.3): "a,b" is two keys, and
  // acting on either one could run a request twice. A key with a comma is refused in both forms,
  // so a key means the same whichever form carried it.
  if (key.find(',') != std::string::npos) {
    throw ApiError(400, "invalid_request_error",
                   "Send exactly one Idempotency-Key: the header holds a comma-separated list.");
  }
  if (key.size() < kMinIdempotencyKeyLength || key.size() > kMaxIdempotencyKeyLength) {
    throw ApiError(400, "invalid_request_error",
                   "The Idempotency-Key must be 20 to 255 characters long (got " + std::to_string(key.size()) + ").");
  }
  for (unsigned char c : key) {
    if (c < 0x20 || c > 0x7e) {
      throw ApiError(400, "invalid_request_error", "The Idempotency-Key must be printable ASCII.");
    }
  }
  return key;
}

BodyFormat body_format(const http::Request& request) {
  auto content_type = request.header("Content-Type");
  std::string_view type = content_type ? media_type(*content_type) : "application/x-www-form-urlencoded";
  if (http::iequals(type, "application/x-www-form-urlencoded")) return BodyFormat::form;
  if (http::iequals(type, "application/json")) return BodyFormat::json;
  throw ApiError(415, "invalid_request_error",
                 "Send parameters as application/x-www-form-urlencoded or application/json.");
}

rides::RideParams parse_ride_params(const http::Request& request) {
  return body_format(request) == BodyFormat::form ? from_form(request.body) : from_json(request.body);
}

std::string read_ride_params(const http::Request& request, const std::vector<std::string>&) {
  return rides::to_json(parse_ride_params(request));
}

std::optional<std::string> query_param(const http::Request& request, std::string_view name) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (!http::form_decode(request.query, fields)) {
    throw ApiError(400, "invalid_request_error", "The query string is malformed.");
  }
  std::optional<std::string> found;
  for (auto& [key, value] : fields) {
    if (key != name) continue;
    // Which of two values counts differs between proxies, caches and frameworks: refuse to guess.
    if (found) throw ApiError(400, "invalid_request_error", "The query parameter " + key + " is given more than once.");
    found = std::move(value);
  }
  return found;
}

}  // namespace rr::api
