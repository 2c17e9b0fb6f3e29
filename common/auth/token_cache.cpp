// Authentication through the token cache.
#include "common/auth/token_cache.hpp"

#include "common/auth/tokens.hpp"

namespace rr::auth {
namespace {

// A request asks for its token's user more than once on its way (the I/O thread's replay check
// and admission, then the flow): each thread keeps its last token's hash, so one token is hashed
// once per run of requests from it on that thread. So each thread holds one token in memory, the
// last it saw, until the next replaces it (the cache itself keeps hashes only).
const std::string& token_hash(std::string_view token) {
  thread_local std::string last_token;
  thread_local std::string last_hash;
  if (last_hash.empty() || token != last_token) {
    last_hash = sha256(token);
    last_token.assign(token);
  }
  return last_hash;
}

}  // namespace

std::optional<User> authenticate_cached(TokenCache& cache, db::ConnectionPool::Lease& conn, std::string_view token) {
  if (!looks_like_token(token)) return std::nullopt;
  std::string hash = token_hash(token);
  auto user = authenticate(conn, token);
  if (user) {
    cache.remember(std::move(hash), *user);
  } else {
    cache.forget(hash);  // revoked while remembered: the renewal ends the entry at once
  }
  return user;
}

std::optional<User> cached_user(TokenCache& cache, std::string_view token) {
  if (!looks_like_token(token)) return std::nullopt;
  return cache.find(token_hash(token));
}

std::optional<User> cached_user_unless_renewing(TokenCache& cache, std::string_view token) {
  if (!looks_like_token(token)) return std::nullopt;
  auto found = cache.find_for_renewal(token_hash(token), cache.ttl() / 4);
  if (!found || found->renew) return std::nullopt;
  return std::move(found->value);
}

}  // namespace rr::auth
