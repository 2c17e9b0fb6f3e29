// A cancellation's parameters: which ride, and the rider's optional reason, rendered canonically
// for storage on the key (equal requests give equal text) and read back by the cancel flow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rr::rides {

inline constexpr std::size_t kMaxCancelReasonBytes = 500;

struct CancelParams {
  std::int64_t ride_id = 0;
  std::optional<std::string> reason;
};

// {"reason":..,"ride_id":N}, reason null when not given.
std::string to_json(const CancelParams& params);
// Nothing when the stored JSON is unreadable.
std::optional<CancelParams> cancel_params_from_json(const std::string& json);

}  // namespace rr::rides
