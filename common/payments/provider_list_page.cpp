// Reads Stripe's list pages and objects with RapidJSON's DOM: a page of 100 charges is a few
// hundred kilobytes, read once per pass, so clarity wins over the SAX reader the hot path uses.
#include "common/payments/provider_list_page.hpp"

#include <rapidjson/document.h>

namespace rr::payments {
namespace {

using Value = rapidjson::Value;

const Value& member(const Value& object, const char* name) {
  auto found = object.FindMember(name);
  if (found == object.MemberEnd()) throw MalformedListing(std::string("listed object has no \"") + name + "\"");
  return found->value;
}

std::string text(const Value& object, const char* name) {
  const Value& value = member(object, name);
  if (!value.IsString()) throw MalformedListing(std::string("listed object's \"") + name + "\" is not a string");
  return {value.GetString(), value.GetStringLength()};
}

std::string optional_text(const Value& object, const char* name) {
  auto found = object.FindMember(name);
  if (found == object.MemberEnd() || !found->value.IsString()) return {};
  return {found->value.GetString(), found->value.GetStringLength()};
}

std::int64_t integer(const Value& object, const char* name) {
  const Value& value = member(object, name);
  if (!value.IsInt64()) throw MalformedListing(std::string("listed object's \"") + name + "\" is not an integer");
  return value.GetInt64();
}

// Metadata values are strings at Stripe; anything else is ignored rather than guessed at.
ProviderMetadata metadata_of(const Value& object) {
  ProviderMetadata metadata;
  auto found = object.FindMember("metadata");
  if (found == object.MemberEnd() || !found->value.IsObject()) return metadata;
  for (const auto& entry : found->value.GetObject()) {
    if (!entry.value.IsString()) continue;
    metadata.emplace(std::string(entry.name.GetString(), entry.name.GetStringLength()),
                     std::string(entry.value.GetString(), entry.value.GetStringLength()));
  }
  return metadata;
}

ListedCharge charge_of(const Value& object) {
  if (!object.IsObject() || optional_text(object, "object") != "charge") {
    throw MalformedListing("listed object is not a charge");
  }
  ListedCharge charge;
  charge.id = text(object, "id");
  charge.amount = integer(object, "amount");
  charge.currency = text(object, "currency");
  charge.customer = optional_text(object, "customer");
  charge.created = integer(object, "created");
  charge.succeeded = text(object, "status") == "succeeded";
  auto refunded = object.FindMember("amount_refunded");
  if (refunded != object.MemberEnd() && refunded->value.IsInt64()) charge.amount_refunded = refunded->value.GetInt64();
  charge.metadata = metadata_of(object);
  return charge;
}

ListedRefund refund_of(const Value& object) {
  if (!object.IsObject() || optional_text(object, "object") != "refund") {
    throw MalformedListing("listed object is not a refund");
  }
  ListedRefund refund;
  refund.id = text(object, "id");
  refund.charge = text(object, "charge");
  refund.amount = integer(object, "amount");
  refund.currency = text(object, "currency");
  refund.created = integer(object, "created");
  auto status = text(object, "status");
  refund.succeeded = status == "succeeded" || status == "pending";
  refund.metadata = metadata_of(object);
  return refund;
}

rapidjson::Document parse(std::string_view body) {
  rapidjson::Document document;
  document.Parse(body.data(), body.size());
  if (document.HasParseError() || !document.IsObject()) throw MalformedListing("provider answer is not a JSON object");
  return document;
}

template <typename Object, typename Read>
ListPage<Object> read_page(std::string_view body, Read read) {
  auto document = parse(body);
  if (optional_text(document, "object") != "list") throw MalformedListing("provider answer is not a list");
  const Value& data = member(document, "data");
  const Value& has_more = member(document, "has_more");
  if (!data.IsArray() || !has_more.IsBool()) throw MalformedListing("provider list has no data array or has_more");
  ListPage<Object> page;
  page.has_more = has_more.GetBool();
  for (const auto& object : data.GetArray()) page.data.push_back(read(object));
  return page;
}

}  // namespace

ListPage<ListedCharge> read_charge_page(std::string_view body) { return read_page<ListedCharge>(body, charge_of); }
ListPage<ListedRefund> read_refund_page(std::string_view body) { return read_page<ListedRefund>(body, refund_of); }
ListedCharge read_charge(std::string_view body) { return charge_of(parse(body)); }
ListedRefund read_refund(std::string_view body) { return refund_of(parse(body)); }

}  // namespace rr::payments
