// Authentication through the token cache.
#include "common/auth/token_cache.hpp"

#include "common/auth/tokens.hpp"
#include "common/fiber/fiber.hpp"

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
  // A caller waiting for another's lookup of the same token blocks its thread: on a request fiber
  // this runs on a worker (in place elsewhere). A lookup that finds nothing (revoked while
  // remembered, say) ends the entry at once.
  std::string hash = token_hash(token);  // a copy: the thread's last hash changes with its next token
  return fiber::blocking([&] { return cache.load_shared(hash, [&] { return authenticate(conn, token); }); });
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
