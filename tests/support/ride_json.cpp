// Reading a ride out of an API answer's JSON body.
#include "support/ride_json.hpp"

#include <rapidjson/document.h>

#include <boost/test/unit_test.hpp>

namespace rr::test {

std::string ride_field(const std::string& body, const char* name) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  BOOST_REQUIRE_MESSAGE(doc.IsObject() && doc.HasMember("ride"), body);
  const auto& value = doc["ride"][name];
  if (value.IsNull()) return "null";
  return value.IsInt64() ? std::to_string(value.GetInt64()) : std::string(value.GetString());
}

}  // namespace rr::test
