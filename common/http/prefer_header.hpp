// The Prefer request header (RFC 7240) as far as the API honours it: the `wait` preference.
#pragma once

#include <cstdint>
#include <optional>

#include "common/http/message.hpp"

namespace rr::http {

// The seconds of the request's first `wait` preference, over every Prefer header in order
// (RFC 7240: several comma-separated preferences, the header repeated, names case-insensitive,
// only a preference's first instance counts, a value token or quoted). Nothing when there is no
// `wait`, or when its value is not a non-negative integer; a huge value saturates (the caller
// caps it anyway).
std::optional<std::uint64_t> preferred_wait_seconds(const Headers& headers);

}  // namespace rr::http
