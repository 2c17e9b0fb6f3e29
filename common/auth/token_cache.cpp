// Authentication through the token cache.
#include "common/auth/token_cache.hpp"

#include "common/auth/tokens.hpp"

namespace rr::auth {

std::optional<User> authenticate_cached(TokenCache& cache, db::ConnectionPool::Lease& conn, std::string_view token) {
  if (!looks_like_token(token)) return std::nullopt;
  std::string hash = sha256(token);
  if (auto user = cache.find(hash)) return user;
  auto user = authenticate(conn, token);
  if (user) cache.remember(hash, *user);
  return user;
}

std::optional<User> cached_user(TokenCache& cache, std::string_view token) {
  if (!looks_like_token(token)) return std::nullopt;
  return cache.find(sha256(token));
}

}  // namespace rr::auth
