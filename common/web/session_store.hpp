// Rider sessions in PostgreSQL (sql/009_rider_sessions.sql): created by signing in with an API
// token, found by the cookie's token, ended by signing out or by expiry (the reaper deletes
// expired rows). Only SHA-256 hashes of the cookie's token and of the API token are stored.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/web/session_settings.hpp"
#include "common/web/session_token.hpp"

namespace rr::web {

// A sign-in keeps at most this many live sessions per user (the oldest go), so a client signing
// in in a loop cannot grow the table.
inline constexpr int kMaxSessionsPerUser = 10;

struct RiderSession {
  auth::User user;
  std::string csrf_token;  // what the session's forms must carry (csrf.hpp)
};

struct NewSession {
  std::string token;  // for the cookie only; never stored, logged or rendered
  RiderSession session;
};

class SessionStore {
 public:
  SessionStore(db::ConnectionPool& pool, const SessionSettings& settings) : pool_(pool), settings_(settings) {}

  // A new session for the API token's user; nothing when the token is not one of ours. One round
  // trip (rider_session_sign_in).
  std::optional<NewSession> sign_in(std::string_view api_token);
  // The unexpired session of this cookie token, with its user; nothing otherwise.
  std::optional<RiderSession> find(std::string_view session_token);
  // Deletes the session; false when there was none.
  bool end(std::string_view session_token);

  const SessionSettings& settings() const { return settings_; }

 private:
  db::ConnectionPool& pool_;
  const SessionSettings& settings_;
};

}  // namespace rr::web
