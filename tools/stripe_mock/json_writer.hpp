// A small builder over RapidJSON's writer for the stand-in provider's objects, which nest (a
// charge holds its outcome, card details and a list of refunds) and write null for absent fields.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rr::stripe_mock {

class JsonWriter {
 public:
  // A null name writes a value with no key: the document itself or an array element.
  JsonWriter& begin_object(const char* name = nullptr) {
    key(name);
    writer_.StartObject();
    return *this;
  }
  JsonWriter& end_object() {
    writer_.EndObject();
    return *this;
  }
  JsonWriter& begin_array(const char* name) {
    key(name);
    writer_.StartArray();
    return *this;
  }
  JsonWriter& end_array() {
    writer_.EndArray();
    return *this;
  }
  JsonWriter& string(const char* name, std::string_view value) {
    key(name);
    writer_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
    return *this;
  }
  // Stripe writes null for an optional field that has no value.
  JsonWriter& optional_string(const char* name, const std::optional<std::string>& value) {
    return value ? string(name, *value) : null(name);
  }
  JsonWriter& optional_string(const char* name, const std::optional<std::string_view>& value) {
    return value ? string(name, *value) : null(name);
  }
  JsonWriter& null(const char* name) {
    key(name);
    writer_.Null();
    return *this;
  }
  JsonWriter& integer(const char* name, std::int64_t value) {
    key(name);
    writer_.Int64(value);
    return *this;
  }
  JsonWriter& boolean(const char* name, bool value) {
    key(name);
    writer_.Bool(value);
    return *this;
  }
  std::string text() const { return std::string(buffer_.GetString(), buffer_.GetSize()); }

 private:
  void key(const char* name) {
    if (name) writer_.Key(name);
  }

  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_{buffer_};
};

}  // namespace rr::stripe_mock
