// Session rows: sign-in, lookup and sign-out, each one short transaction.
#include "common/web/session_store.hpp"

#include "common/auth/tokens.hpp"
#include "common/base/random.hpp"
#include "common/db/transaction.hpp"

namespace rr::web {
namespace {

const db::Statement kSignIn{"rider_session_sign_in",
                            "SELECT user_id, email, stripe_customer_id FROM rider_session_sign_in($1, $2, $3, $4, $5)"};
const db::Statement kFind{"rider_session_find",
                          "SELECT u.id, u.email, u.stripe_customer_id, s.csrf_token FROM rider_sessions s "
                          "JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > now()"};
const db::Statement kEnd{"rider_session_end", "DELETE FROM rider_sessions WHERE token_hash = $1"};

template <typename... Args>
db::Result run(db::ConnectionPool& pool, const db::Statement& statement, Args&&... args) {
  auto conn = pool.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, statement, std::forward<Args>(args)...);
  tx.commit();
  return rows;
}

}  // namespace

std::optional<NewSession> SessionStore::sign_in(std::string_view api_token) {
  if (!auth::looks_like_token(api_token)) return std::nullopt;
  NewSession created;
  created.token = random_hex(kSessionTokenBytes);
  created.session.csrf_token = random_hex(32);
  auto rows = run(pool_, kSignIn, db::bytes(auth::sha256(created.token)), db::bytes(auth::sha256(api_token)),
                  created.session.csrf_token, static_cast<double>(settings_.ttl.count()), kMaxSessionsPerUser);
  if (rows.empty()) return std::nullopt;
  created.session.user = {rows[0][0].as<std::int64_t>(), rows[0][1].as<std::string>(), rows[0][2].as<std::string>()};
  return created;
}

std::optional<RiderSession> SessionStore::find(std::string_view session_token) {
  if (!looks_like_session_token(session_token)) return std::nullopt;
  auto rows = run(pool_, kFind, db::bytes(auth::sha256(session_token)));
  if (rows.empty()) return std::nullopt;
  return RiderSession{{rows[0][0].as<std::int64_t>(), rows[0][1].as<std::string>(), rows[0][2].as<std::string>()},
                      rows[0][3].as<std::string>()};
}

bool SessionStore::end(std::string_view session_token) {
  if (!looks_like_session_token(session_token)) return false;
  return run(pool_, kEnd, db::bytes(auth::sha256(session_token))).affected_rows() > 0;
}

}  // namespace rr::web
