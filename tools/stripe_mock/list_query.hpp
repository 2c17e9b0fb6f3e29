// The query string of Stripe's list endpoints (GET /v1/charges, GET /v1/refunds) read the way
// Stripe reads it: limit, the two cursors, created as an integer or a range, and the endpoint's
// own filter (customer, charge), each refused in Stripe's words when it is not what Stripe takes.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/http/message.hpp"

namespace rr::stripe_mock {

inline constexpr std::int64_t kDefaultListLimit = 10;
inline constexpr std::int64_t kMaxListLimit = 100;

struct ListQuery {
  std::int64_t limit = kDefaultListLimit;
  // Object ids. Both may be set here: whether they name objects is checked first, as Stripe does,
  // and only then that one alone was given.
  std::optional<std::string> starting_after;
  std::optional<std::string> ending_before;
  std::int64_t created_from = std::numeric_limits<std::int64_t>::min();  // inclusive, unix seconds
  std::int64_t created_to = std::numeric_limits<std::int64_t>::max();    // inclusive
  std::optional<std::string> owner;  // the value of the endpoint's filter: a customer or a charge id
};

// `owner_filter` names the endpoint's filter ("customer" for charges, "charge" for refunds). The
// last of repeated parameters counts. The query, or the 400 that refuses it.
std::variant<ListQuery, http::Response> parse_list_query(std::string_view query, std::string_view owner_filter);

}  // namespace rr::stripe_mock
