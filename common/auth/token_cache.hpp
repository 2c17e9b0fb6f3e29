// A bounded, short-lived cache of token -> user, so that a request does not spend a database
// round trip on authentication every time. Only successful lookups are cached; an entry lives
// at most `ttl`, which bounds how long a revoked token keeps working.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/auth/users.hpp"

namespace rr::auth {

class TokenCache {
 public:
  TokenCache(std::size_t max_entries, std::chrono::milliseconds ttl) : max_entries_(max_entries), ttl_(ttl) {}

  // Keys are the tokens' SHA-256 hashes: the cache never holds a token itself.
  std::optional<User> find(const std::string& token_hash);
  void remember(const std::string& token_hash, const User& user);

 private:
  struct Entry {
    User user;
    std::chrono::steady_clock::time_point expires;
  };
  std::size_t max_entries_;
  std::chrono::milliseconds ttl_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

// authenticate() through the cache.
std::optional<User> authenticate_cached(TokenCache& cache, db::ConnectionPool::Lease& conn, std::string_view token);
// The cache alone, without a database: nullopt when the token's user is not remembered.
std::optional<User> cached_user(TokenCache& cache, std::string_view token);

}  // namespace rr::auth
