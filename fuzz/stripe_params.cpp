// The stand-in provider's reading of a request's form (tools/stripe_mock/params.*), as its
// endpoints call it: decoded and sorted fields, refused when a name is unknown, metadata[...]
// within Stripe's limits, an amount as Stripe's whole number. Each reading is compared with one of
// this file's own, written from the rules in params.hpp, and every refusal must be a 400 whose body
// is Stripe's error JSON naming the offending parameter.
#include <rapidjson/document.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/http/form.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "tools/stripe_mock/params.hpp"

namespace {

using rr::stripe_mock::Params;

std::optional<std::string_view> metadata_key(std::string_view field) {
  if (field.size() < 11 || !field.starts_with("metadata[") || field.back() != ']') return std::nullopt;
  auto key = field.substr(9, field.size() - 10);
  if (key.find('[') != std::string_view::npos || key.find(']') != std::string_view::npos) return std::nullopt;
  return key;
}

// A Stripe error response: `status` (400 unless said), {"error":{"type":"invalid_request_error",
// "message":...,"param":...}}, "param" omitted when empty.
void check_error(const rr::http::Response& response, std::string_view param, int status = 400) {
  FUZZ_CHECK(response.status == status);
  rapidjson::Document body;
  body.Parse(response.body.data(), response.body.size());
  FUZZ_CHECK(!body.HasParseError() && body.IsObject() && body.HasMember("error") && body["error"].IsObject());
  const auto& error = body["error"];
  FUZZ_CHECK(error.HasMember("message") && error["message"].IsString());
  FUZZ_CHECK(error.HasMember("type") && std::string_view(error["type"].GetString()) == "invalid_request_error");
  if (param.empty()) {
    FUZZ_CHECK(!error.HasMember("param"));  // a field without a name: Stripe's body omits it
    return;
  }
  FUZZ_CHECK(error.HasMember("param") && error["param"].IsString());
  FUZZ_CHECK(std::string_view(error["param"].GetString(), error["param"].GetStringLength()) == param);
}

// Stripe's whole number: optional '-', digits, value from 1 to 99999999 (leading zeros allowed).
bool is_valid_amount(std::string_view text) {
  if (text.starts_with('-')) return false;  // a negative number is never in range ("-0" is 0)
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) return false;
  auto digits = text.substr(std::min(text.find_first_not_of('0'), text.size()));
  return !digits.empty() && digits.size() <= 8;
}

void check_amount(const std::string& text) {
  auto amount = rr::stripe_mock::positive_amount(text, "amount");
  if (auto* value = std::get_if<std::int64_t>(&amount)) {
    FUZZ_CHECK(is_valid_amount(text));
    FUZZ_CHECK(std::to_string(*value) == text.substr(std::min(text.find_first_not_of('0'), text.size())));
  } else {
    FUZZ_CHECK(!is_valid_amount(text));
    check_error(std::get<rr::http::Response>(amount), "amount");
  }
}

void check_metadata(const Params& params) {
  // The rules read afresh: a key over 40 or a value over 500 characters refuses the whole; an
  // empty value sets nothing; a key's value is its last in the sorted fields; at most 50 keys.
  std::map<std::string, std::string> expected;
  bool too_long = false;
  for (const auto& [field, value] : params) {
    auto key = metadata_key(field);
    if (!key) continue;
    too_long = too_long || key->size() > 40 || value.size() > 500;
    if (!value.empty()) expected[std::string(*key)] = value;
  }
  auto read = rr::stripe_mock::metadata(params);
  if (auto* metadata = std::get_if<rr::stripe_mock::Metadata>(&read)) {
    FUZZ_CHECK(!too_long && expected.size() <= 50);
    std::map<std::string, std::string> read_as_map(metadata->begin(), metadata->end());
    FUZZ_CHECK(read_as_map == expected);
    FUZZ_CHECK(metadata->size() == expected.size());  // no key twice
  } else {
    FUZZ_CHECK(too_long || expected.size() > 50);
    const auto& response = std::get<rr::http::Response>(read);
    FUZZ_CHECK(response.status == 400);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  Params params;
  if (!rr::http::form_decode(body, params)) {
    check_amount(std::string(body));
    return 0;
  }
  std::sort(params.begin(), params.end());

  auto refused = rr::stripe_mock::reject_unknown(params, {"amount", "currency", "customer", "description"});
  std::optional<std::string> first_unknown;
  for (const auto& [name, value] : params) {
    if (!metadata_key(name) && name != "amount" && name != "currency" && name != "customer" && name != "description") {
      first_unknown = name;
      break;
    }
  }
  FUZZ_CHECK(refused.has_value() == first_unknown.has_value());
  if (refused) check_error(*refused, *first_unknown);

  auto amount = rr::stripe_mock::param(params, "amount");
  check_amount(amount ? *amount : std::string(body));
  check_metadata(params);

  // The other refusals an endpoint builds from what the client sent: a missing parameter (named by
  // any field's name) and an unknown object (its id any field's value).
  if (!params.empty()) {
    check_error(rr::stripe_mock::missing(params.front().first), params.front().first);
    check_error(rr::stripe_mock::no_such("charge", params.back().second, "charge"), "charge", 404);
  }
  FUZZ_CHECK(rr::stripe_mock::now_epoch() > 0);
  return 0;
}
