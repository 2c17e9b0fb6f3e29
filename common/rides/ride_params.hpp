// A ride request's four coordinates: parsed, range-checked, and rendered canonically for storage.
#pragma once

#include <optional>
#include <string>

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
// Shortest text that reads back as the same double.
std::string format_coordinate(double value);

inline bool valid_latitude(double v) { return v >= -90.0 && v <= 90.0; }
inline bool valid_longitude(double v) { return v >= -180.0 && v <= 180.0; }

}  // namespace rr::rides
