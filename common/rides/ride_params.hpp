// A ride request's four coordinates: parsed, range-checked, and rendered canonically for storage.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace rr::rides {

struct RideParams {
  double origin_lat = 0;
  double origin_lon = 0;
  double target_lat = 0;
  double target_lon = 0;
};

// Canonical JSON ({"origin_lat":..,...}, shortest round-trip numbers, -0 written as 0), stored as
// the key's request_params and compared as JSONB, so 0 and 0.0 are the same request.
std::string to_json(const RideParams& params);
// Reads stored request_params back; nothing when a field is missing or not a number.
std::optional<RideParams> from_json(const std::string& json);
// The four coordinate texts of canonical params, exactly as to_json wrote them (origin_lat,
// origin_lon, target_lat, target_lon), or nothing for any other text. A new key's call sends these
// without reading the JSON back into doubles and printing them again: fewer steps, and the very
// digits stored in request_params.
std::optional<std::array<std::string_view, 4>> canonical_coordinates(std::string_view params_json);
// Shortest text that reads back as the same double.
std::string format_coordinate(double value);

inline bool valid_latitude(double v) { return v >= -90.0 && v <= 90.0; }
inline bool valid_longitude(double v) { return v >= -180.0 && v <= 180.0; }

}  // namespace rr::rides
