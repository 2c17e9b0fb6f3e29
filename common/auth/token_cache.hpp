// A bounded, short-lived cache of token -> user, so that a request does not spend a database
// round trip on authentication every time. Only successful lookups are cached; an entry lives
// at most `ttl`, which bounds how long a revoked token keeps working.
#pragma once

#include <optional>
#include <string_view>

#include "common/auth/users.hpp"
#include "common/base/ttl_cache.hpp"

namespace rr::auth {

// Keys are the tokens' SHA-256 hashes: the cache never holds a token itself. The bound and the
// expiry are the shared cache's (common/base/ttl_cache.hpp): oldest entry out when full.
using TokenCache = base::TtlCache<User>;

// authenticate() through the cache.
std::optional<User> authenticate_cached(TokenCache& cache, db::ConnectionPool::Lease& conn, std::string_view token);
// The cache alone, without a database: nullopt when the token's user is not remembered.
std::optional<User> cached_user(TokenCache& cache, std::string_view token);

}  // namespace rr::auth
