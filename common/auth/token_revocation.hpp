// Listing and revoking a user's API tokens (`user token --email E --list | --revoke PREFIX`). A
// revoked token's row is deleted; an API that cached its user stops accepting it within
// TOKEN_CACHE_TTL, when the cache entry expires and the lookup finds nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/db/connection_pool.hpp"

namespace rr::auth {

struct TokenInfo {
  std::string prefix;      // api_tokens.token_prefix; "" for tokens issued before it was kept
  std::string tag;         // log_tag of the token: 12 hex digits of its SHA-256
  std::string created_at;  // RFC 3339, UTC
};

struct Revocation {
  enum class Result {
    revoked,    // exactly one token matched and is gone
    not_found,  // none of the user's tokens matches
    ambiguous,  // several match: nothing was revoked; give more characters
  };
  Result result = Result::not_found;
  std::vector<TokenInfo> matches;  // what matched (the revoked one, or the candidates)
  std::int64_t remaining = 0;      // the user's tokens left afterwards
};

// Throws UserNotFound for an unknown email.
std::vector<TokenInfo> list_tokens(db::PooledConnection& conn, const std::string& email);

// `prefix_or_token` is either a whole token (matched by its hash, so also tokens older than
// token_prefix) or the start of one: "rr_" and 4 to 8 hex digits (see is_token_prefix). Only
// `email`'s tokens are considered. Throws UserNotFound, or InvalidUserInput for any other shape.
Revocation revoke_token(db::PooledConnection& conn, const std::string& email, const std::string& prefix_or_token);

// "rr_" followed by 4 to 8 lowercase hex digits.
bool is_token_prefix(std::string_view text);

}  // namespace rr::auth
