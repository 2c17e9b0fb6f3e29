// Stripe's objects as the stand-in provider creates them: customers and charges, validated the
// way Stripe validates them and rendered in its wire format.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>

#include "common/config/environment.hpp"
#include "common/stripe_mock/mock.hpp"
#include "common/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

constexpr std::int64_t kMaxAmount = 99999999;  // Stripe's limit: eight digits

std::optional<std::string> param(const Params& params, std::string_view name) {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return std::nullopt;
}

// Stripe rejects parameters it does not know; metadata[...] is free-form.
std::optional<std::string> unknown_param(const Params& params, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : params) {
    if (key.starts_with("metadata[")) continue;
    if (std::find(known.begin(), known.end(), key) == known.end()) return key;
  }
  return std::nullopt;
}

http::Response missing(std::string_view name) {
  return stripe_error(400, "invalid_request_error", "Missing required param: " + std::string(name) + ".",
                      {.code = "parameter_missing", .param = name});
}

http::Response unknown(const std::string& name) {
  return stripe_error(400, "invalid_request_error", "Received unknown parameter: " + name,
                      {.code = "parameter_unknown", .param = name});
}

std::int64_t now_epoch() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class JsonObject {
 public:
  JsonObject() { writer_.StartObject(); }
  JsonObject& string(const char* name, std::string_view value) {
    writer_.Key(name);
    writer_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
    return *this;
  }
  // Stripe writes null for an optional field that was not given.
  JsonObject& optional_string(const char* name, const std::optional<std::string>& value) {
    if (value) return string(name, *value);
    writer_.Key(name);
    writer_.Null();
    return *this;
  }
  JsonObject& integer(const char* name, std::int64_t value) {
    writer_.Key(name);
    writer_.Int64(value);
    return *this;
  }
  JsonObject& boolean(const char* name, bool value) {
    writer_.Key(name);
    writer_.Bool(value);
    return *this;
  }
  std::string finish() {
    writer_.EndObject();
    return std::string(buffer_.GetString(), buffer_.GetSize());
  }

 private:
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_{buffer_};
};

http::Response json(std::string body) {
  http::Response response;
  response.body = std::move(body);
  return response;
}

}  // namespace

http::Response Mock::create_charge(const Params& params, const std::string& idempotency_key) {
  if (auto name = unknown_param(params, {"amount", "currency", "customer", "description"})) return unknown(*name);
  auto amount_text = param(params, "amount");
  if (!amount_text) return missing("amount");
  auto currency = param(params, "currency");
  if (!currency) return missing("currency");
  auto customer = param(params, "customer");
  if (!customer || customer->empty()) return missing("customer");
  auto amount = config::parse_integer(*amount_text);
  if (!amount || *amount < 1 || *amount > kMaxAmount) {
    return stripe_error(400, "invalid_request_error", "Invalid integer: " + *amount_text,
                        {.code = "parameter_invalid_integer", .param = "amount"});
  }
  std::string lower_currency;
  for (char c : *currency) lower_currency += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower_currency.size() != 3 ||
      !std::all_of(lower_currency.begin(), lower_currency.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
    return stripe_error(400, "invalid_request_error", "Invalid currency: " + *currency,
                        {.code = "parameter_invalid_string", .param = "currency"});
  }
  // A magic customer, like Stripe's test card numbers, makes every charge fail as a decline.
  if (customer->find("declined") != std::string::npos) {
    return stripe_error(402, "card_error", "Your card was declined.",
                        {.code = "card_declined", .decline_code = "generic_decline"});
  }

  auto description = param(params, "description");
  Charge charge{new_id("ch_"), idempotency_key, *customer, lower_currency, description.value_or(""), *amount};
  std::string body = JsonObject()
                         .string("id", charge.id)
                         .string("object", "charge")
                         .integer("amount", charge.amount)
                         .integer("amount_captured", charge.amount)
                         .integer("amount_refunded", 0)
                         .boolean("captured", true)
                         .integer("created", now_epoch())
                         .string("currency", charge.currency)
                         .string("customer", charge.customer)
                         .optional_string("description", description)
                         .boolean("livemode", false)
                         .boolean("paid", true)
                         .boolean("refunded", false)
                         .string("status", "succeeded")
                         .finish();
  charges_.push_back(std::move(charge));
  ++stats_.charges;
  return json(std::move(body));
}

http::Response Mock::create_customer(const Params& params) {
  if (auto name = unknown_param(params, {"description", "email", "name", "phone"})) return unknown(*name);
  return json(JsonObject()
                  .string("id", new_id("cus_"))
                  .string("object", "customer")
                  .integer("created", now_epoch())
                  .optional_string("description", param(params, "description"))
                  .optional_string("email", param(params, "email"))
                  .boolean("livemode", false)
                  .optional_string("name", param(params, "name"))
                  .optional_string("phone", param(params, "phone"))
                  .finish());
}

}  // namespace rr::stripe_mock
