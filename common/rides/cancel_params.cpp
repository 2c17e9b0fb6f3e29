// Canonical rendering and parsing of cancellation parameters.
#include "common/rides/cancel_params.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace rr::rides {

std::string to_json(const CancelParams& params) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("reason");
  if (params.reason)
    w.String(params.reason->data(), static_cast<rapidjson::SizeType>(params.reason->size()));
  else
    w.Null();
  w.Key("ride_id");
  w.Int64(params.ride_id);
  w.EndObject();
  return buf.GetString();
}

std::optional<CancelParams> cancel_params_from_json(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  auto ride = doc.FindMember("ride_id");
  if (ride == doc.MemberEnd() || !ride->value.IsInt64()) return std::nullopt;
  CancelParams params;
  params.ride_id = ride->value.GetInt64();
  auto reason = doc.FindMember("reason");
  if (reason != doc.MemberEnd() && reason->value.IsString()) {
    params.reason = std::string(reason->value.GetString(), reason->value.GetStringLength());
  }
  return params;
}

}  // namespace rr::rides
