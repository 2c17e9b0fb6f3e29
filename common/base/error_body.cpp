// Renders the error object with RapidJSON, which escapes whatever the message holds.
#include "common/base/error_body.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace rr {

std::string error_body(std::string_view type, std::string_view message) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("type");
  w.String(type.data(), static_cast<rapidjson::SizeType>(type.size()));
  w.Key("message");
  w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

}  // namespace rr
