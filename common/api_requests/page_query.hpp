// The parts of GET /rides and GET /rides/{id} a client can get wrong, checked without a database:
// the I/O thread answers a bad one at once and the handler reads the same values.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/http/message.hpp"

namespace rr::api {

struct PageQuery {
  std::int64_t limit = 20;
  std::optional<std::int64_t> cursor;  // newest ride id not to include
};

inline constexpr std::int64_t kDefaultPageSize = 20;
inline constexpr std::int64_t kMaxPageSize = 100;

// ?limit=1..100&cursor=<ride id>. Throws ApiError 400 when malformed.
PageQuery parse_page_query(const http::Request& request);
// The id of /rides/{id}. Throws ApiError 404 (no such ride) when it is not a positive integer.
std::int64_t parse_ride_id(std::string_view id_text);

}  // namespace rr::api
