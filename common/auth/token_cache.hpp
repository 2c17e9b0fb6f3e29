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

// authenticate(), and its answer remembered (a user) or forgotten (none): a lookup, for a token
// the cache did not know or one whose entry is to be renewed. Callers looking the same token up
// at the same time share one lookup (the cache's load_shared): a cold cache under load costs one.
std::optional<User> authenticate_cached(TokenCache& cache, db::ConnectionPool::Lease& conn, std::string_view token);
// The cache alone, without a database: nullopt when the token's user is not remembered.
std::optional<User> cached_user(TokenCache& cache, std::string_view token);

// cached_user() for a caller that can look the token up: nullopt also when this caller is the
// one to renew the entry before it expires (the last quarter of the cache's ttl), which it does
// with authenticate_cached(). Every other caller meanwhile gets the remembered user, so an
// expiry under load costs one lookup, not one per request that arrives during it.
std::optional<User> cached_user_unless_renewing(TokenCache& cache, std::string_view token);

}  // namespace rr::auth
