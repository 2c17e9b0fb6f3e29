// The caller's user from the bearer token: from the token cache when it knows the token,
// otherwise looked up on a pool connection (and remembered).
#pragma once

#include <optional>

#include "common/auth/auth_failure_throttle.hpp"
#include "common/auth/token_cache.hpp"
#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/http/message.hpp"

namespace rr::api {

class Authenticator {
 public:
  Authenticator(db::ConnectionPool& pool, auth::TokenCache& tokens, auth::AuthFailureThrottle& failures)
      : pool_(pool), tokens_(tokens), failures_(failures) {}

  // Throws ApiError 401 for a missing, malformed or unknown token; 429 with Retry-After, without
  // asking the database, for a token the cache does not know from an address that failed too often.
  auth::User user_of(const http::Request& request);
  // The user when the cache knows the token; never touches the database. Throws ApiError 401 when
  // the request carries no bearer token.
  std::optional<auth::User> cached_user_of(const http::Request& request);

 private:
  db::ConnectionPool& pool_;
  auth::TokenCache& tokens_;
  auth::AuthFailureThrottle& failures_;
};

}  // namespace rr::api
