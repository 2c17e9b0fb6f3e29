// Stripe's parameter validation, shared by the stand-in provider's endpoints.
#include "tools/stripe_mock/params.hpp"

#include <algorithm>
#include <chrono>

#include "common/config/environment.hpp"
#include "tools/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

constexpr std::int64_t kMaxAmount = 99999999;  // Stripe's limit: eight digits
constexpr std::size_t kMaxMetadataKeys = 50;
constexpr std::size_t kMaxMetadataKeyLength = 40;
constexpr std::size_t kMaxMetadataValueLength = 500;

// The key of a metadata[key] field, or nothing for any other field.
std::optional<std::string_view> metadata_key(std::string_view field) {
  constexpr std::string_view kPrefix = "metadata[";
  if (!field.starts_with(kPrefix) || !field.ends_with(']') || field.size() <= kPrefix.size() + 1) return std::nullopt;
  auto key = field.substr(kPrefix.size(), field.size() - kPrefix.size() - 1);
  if (key.find_first_of("[]") != std::string_view::npos) return std::nullopt;
  return key;
}

http::Response invalid_metadata(const std::string& message, std::string_view param_name) {
  return stripe_error(400, "invalid_request_error", message, {.code = "parameter_invalid_string", .param = param_name});
}

}  // namespace

std::optional<std::string> param(const Params& params, std::string_view name) {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::optional<http::Response> reject_unknown(const Params& params, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : params) {
    if (metadata_key(key)) continue;
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return stripe_error(400, "invalid_request_error", "Received unknown parameter: " + key,
                          {.code = "parameter_unknown", .param = key});
    }
  }
  return std::nullopt;
}

http::Response missing(std::string_view name) {
  return stripe_error(400, "invalid_request_error", "Missing required param: " + std::string(name) + ".",
                      {.code = "parameter_missing", .param = name});
}

std::variant<std::int64_t, http::Response> positive_amount(const std::string& text, std::string_view name) {
  auto amount = config::parse_integer(text);
  if (!amount || *amount < 1 || *amount > kMaxAmount) {
    return stripe_error(400, "invalid_request_error", "Invalid integer: " + text,
                        {.code = "parameter_invalid_integer", .param = name});
  }
  return *amount;
}

std::variant<Metadata, http::Response> metadata(const Params& params) {
  Metadata result;
  for (const auto& [field, value] : params) {
    auto key = metadata_key(field);
    if (!key) continue;
    if (key->size() > kMaxMetadataKeyLength) {
      return invalid_metadata("Metadata keys can have up to 40 characters. Invalid key: " + std::string(*key), field);
    }
    if (value.size() > kMaxMetadataValueLength) {
      return invalid_metadata("Metadata values can have up to 500 characters, but you passed in a value that is " +
                                  std::to_string(value.size()) + " characters. Invalid value: " + value.substr(0, 40),
                              field);
    }
    if (value.empty()) continue;
    // A key sent twice keeps one value (fields arrive sorted, so repeats are adjacent).
    if (!result.empty() && result.back().first == *key) {
      result.back().second = value;
    } else {
      result.emplace_back(std::string(*key), value);
    }
  }
  if (result.size() > kMaxMetadataKeys) {
    return invalid_metadata("You can only specify up to 50 metadata keys.", "metadata");
  }
  return result;
}

http::Response no_such(std::string_view object, const std::string& id, std::string_view param_name) {
  return stripe_error(404, "invalid_request_error", "No such " + std::string(object) + ": '" + id + "'",
                      {.code = "resource_missing", .param = param_name});
}

std::int64_t now_epoch() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace rr::stripe_mock
