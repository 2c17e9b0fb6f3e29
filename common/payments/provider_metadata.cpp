// The metadata of charges and refunds, and the compact JSON it carries a request's parameters in.
#include "common/payments/provider_metadata.hpp"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace rr::payments {

namespace {

// RapidJSON's writer, with numbers read as text (kParseNumbersAsStringsFlag) written back as the
// same text: a double's round trip could change the digits the client sent. (Writer::RawNumber
// would quote them.)
class CompactWriter : public rapidjson::Writer<rapidjson::StringBuffer> {
 public:
  using Writer::Writer;
  bool RawNumber(const Ch* text, rapidjson::SizeType length, bool) {
    return RawValue(text, length, rapidjson::kNumberType);
  }
};

}  // namespace

std::string compact_json(std::string_view json) {
  rapidjson::StringBuffer buffer;
  CompactWriter writer(buffer);
  rapidjson::Reader reader;
  rapidjson::MemoryStream stream(json.data(), json.size());
  if (!reader.Parse<rapidjson::kParseNumbersAsStringsFlag>(stream, writer)) return std::string(json);
  return {buffer.GetString(), buffer.GetSize()};
}

Metadata charge_metadata(const ChargeMetadataSource& source) {
  return {
      {kMetadataUserId, std::to_string(source.user_id)}, {kMetadataRideId, std::to_string(source.ride_id)},
      {kMetadataIdempotencyKey, source.idempotency_key}, {kMetadataRequestParams, compact_json(source.request_params)},
      {kMetadataRideCreatedAt, source.ride_created_at},
  };
}

Metadata refund_metadata(const RefundMetadataSource& source) {
  return {
      {kMetadataUserId, std::to_string(source.user_id)},
      {kMetadataRideId, std::to_string(source.ride_id)},
      {kMetadataIdempotencyKey, source.idempotency_key},
      {kMetadataRequestParams, compact_json(source.request_params)},
      {kMetadataCharge, source.charge},
  };
}

}  // namespace rr::payments
