// Canonical rendering and parsing of ride parameters.
#include "common/rides/ride_params.hpp"

#include <rapidjson/document.h>

#include <cctype>
#include <charconv>

namespace rr::rides {

std::string format_coordinate(double value) {
  if (value == 0) value = 0;  // folds -0 into 0
  char buf[32];
  auto [end, error] = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, end);
}

std::string to_json(const RideParams& p) {
  return "{\"origin_lat\":" + format_coordinate(p.origin_lat) + ",\"origin_lon\":" + format_coordinate(p.origin_lon) +
         ",\"target_lat\":" + format_coordinate(p.target_lat) + ",\"target_lon\":" + format_coordinate(p.target_lon) +
         "}";
}

std::optional<std::array<std::string_view, 4>> canonical_coordinates(std::string_view params_json) {
  static constexpr std::array<std::string_view, 4> kOpenings = {
      "{\"origin_lat\":", ",\"origin_lon\":", ",\"target_lat\":", ",\"target_lon\":"};
  std::array<std::string_view, 4> texts;
  std::string_view rest = params_json;
  for (std::size_t i = 0; i < kOpenings.size(); ++i) {
    if (!rest.starts_with(kOpenings[i])) return std::nullopt;
    rest.remove_prefix(kOpenings[i].size());
    // What format_coordinate writes: an optional minus, digits, '.', 'e', '+' or '-' after 'e'.
    std::size_t length = 0;
    while (length < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[length])) || rest[length] == '.' ||
                                    rest[length] == 'e' || rest[length] == '-' || rest[length] == '+')) {
      ++length;
    }
    if (length == 0) return std::nullopt;
    texts[i] = rest.substr(0, length);
    rest.remove_prefix(length);
  }
  if (rest != "}") return std::nullopt;
  return texts;
}

std::optional<RideParams> from_json(const std::string& json) {
  rapidjson::Document doc;
  // Full precision: RapidJSON's default, faster parse may land a few ULPs off, and a resumed key's
  // ride would then hold other digits than its stored params (about a third of random coordinate
  // sets did, tests/rides/ride_params_test.cpp).
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  RideParams p;
  auto read = [&](const char* name, double& out) {
    auto it = doc.FindMember(name);
    if (it == doc.MemberEnd() || !it->value.IsNumber()) return false;
    out = it->value.GetDouble();
    return true;
  };
  if (!read("origin_lat", p.origin_lat) || !read("origin_lon", p.origin_lon) || !read("target_lat", p.target_lat) ||
      !read("target_lon", p.target_lon)) {
    return std::nullopt;
  }
  return p;
}

}  // namespace rr::rides
