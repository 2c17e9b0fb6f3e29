// Token cache with expiry and a size bound.
#include "common/auth/token_cache.hpp"

#include "common/auth/tokens.hpp"

namespace rr::auth {

std::optional<User> TokenCache::find(const std::string& token_hash) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(token_hash);
  if (it == entries_.end()) return std::nullopt;
  if (it->second.expires <= std::chrono::steady_clock::now()) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.user;
}

void TokenCache::remember(const std::string& token_hash, const User& user) {
  if (max_entries_ == 0) return;
  std::lock_guard lock(mutex_);
  // Simplest bound that cannot grow without limit: start over when full. A refill costs one
  // lookup per active token.
  if (entries_.size() >= max_entries_) entries_.clear();
  entries_[token_hash] = Entry{user, std::chrono::steady_clock::now() + ttl_};
}

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
