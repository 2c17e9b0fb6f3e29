// Renders Stripe-shaped error responses.
#include "tools/stripe_mock/stripe_errors.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>

namespace rr::stripe_mock {

http::Response stripe_error(int status, std::string_view type, std::string_view message, ErrorDetails details) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  auto field = [&](const char* name, std::string_view value) {
    writer.Key(name);
    writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  };
  writer.StartObject();
  writer.Key("error");
  writer.StartObject();
  if (!details.charge.empty()) field("charge", details.charge);
  if (!details.code.empty()) field("code", details.code);
  if (!details.decline_code.empty()) field("decline_code", details.decline_code);
  if (!details.code.empty()) {
    std::string doc_url = "https://stripe.com/docs/error-codes/";
    for (char c : details.code) doc_url += c == '_' ? '-' : c;
    field("doc_url", doc_url);
  }
  field("message", message);
  if (!details.param.empty()) field("param", details.param);
  field("type", type);
  writer.EndObject();
  writer.EndObject();

  http::Response response;
  response.status = status;
  response.body.assign(buffer.GetString(), buffer.GetSize());
  return response;
}

http::Response card_declined(std::string_view charge_id) {
  return stripe_error(402, "card_error", "Your card was declined.",
                      {.code = "card_declined", .decline_code = "generic_decline", .charge = charge_id});
}

}  // namespace rr::stripe_mock
