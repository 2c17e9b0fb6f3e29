// The session token's form check, apart from the session rows so that it needs no database.
#include "common/web/session_token.hpp"

namespace rr::web {

bool looks_like_session_token(std::string_view token) {
  if (token.size() != kSessionTokenBytes * 2) return false;
  for (char c : token) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace rr::web
