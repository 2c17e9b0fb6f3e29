// The form of the rider pages' random tokens, a session cookie's and a CSRF token: checked before
// any lookup or comparison, so that no other bytes a client sends reach the database or memcmp.
#pragma once

#include <cstddef>
#include <string_view>

namespace rr::web {

inline constexpr std::size_t kSessionTokenBytes = 32;

// 64 lowercase hex characters (kSessionTokenBytes random bytes).
bool looks_like_session_token(std::string_view token);

}  // namespace rr::web
