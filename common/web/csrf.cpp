// CSRF token generation and comparison.
#include "common/web/csrf.hpp"

#include <openssl/crypto.h>

#include "common/base/random.hpp"
#include "common/web/session_token.hpp"

namespace rr::web {

std::string new_csrf_token() { return random_hex(32); }

bool csrf_matches(std::string_view expected, std::string_view given) {
  // Same shape as a session token; the length check first leaks only that the length is wrong.
  if (!looks_like_session_token(given) || expected.size() != given.size()) return false;
  return CRYPTO_memcmp(expected.data(), given.data(), given.size()) == 0;
}

}  // namespace rr::web
