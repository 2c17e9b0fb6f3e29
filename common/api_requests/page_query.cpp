// Query and path validation for the ride reads.
#include "common/api_requests/page_query.hpp"

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/config/environment.hpp"

namespace rr::api {

PageQuery parse_page_query(const http::Request& request) {
  PageQuery query;
  query.limit = kDefaultPageSize;
  if (auto text = query_param(request, "limit")) {
    auto parsed = config::parse_integer(*text);
    if (!parsed || *parsed < 1 || *parsed > kMaxPageSize) {
      throw ApiError(400, "invalid_request_error", "limit must be a whole number from 1 to 100.");
    }
    query.limit = *parsed;
  }
  if (auto text = query_param(request, "cursor")) {
    query.cursor = config::parse_integer(*text);
    if (!query.cursor || *query.cursor < 1) throw ApiError(400, "invalid_request_error", "cursor must be a ride id.");
  }
  return query;
}

std::int64_t parse_ride_id(std::string_view id_text) {
  auto id = config::parse_integer(id_text);
  if (!id || *id <= 0) throw ApiError(404, "invalid_request_error", "No such ride.");
  return *id;
}

}  // namespace rr::api
