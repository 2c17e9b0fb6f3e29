// Token revocation: match among one user's tokens, refuse unless exactly one matches, delete it.
#include "common/auth/token_revocation.hpp"

#include "common/auth/tokens.hpp"
#include "common/auth/users.hpp"
#include "common/db/sql_timestamps.hpp"
#include "common/db/transaction.hpp"

namespace rr::auth {
namespace {

constexpr std::size_t kMinPrefixHexDigits = 4;

const db::Statement kUserIdByEmail{"ops_user_id_by_email", "SELECT id FROM users WHERE email = $1"};

#define RR_TOKEN_COLUMNS \
  "COALESCE(token_prefix, ''), left(encode(token_hash, 'hex'), 12), " RR_SQL_UTC_TEXT("created_at")

// $1 user id
const db::Statement kListTokens{"ops_list_tokens",
                                "SELECT " RR_TOKEN_COLUMNS
                                " FROM api_tokens WHERE user_id = $1 ORDER BY created_at, token_hash"};

// $1 user id  $2 token hash in hex ('' unless a whole token was given)  $3 prefix ('' when a whole token
// was given). Locks what matches so that the count we decide on is the count we delete from.
const db::Statement kMatchTokens{
    "ops_match_tokens", "SELECT encode(token_hash, 'hex'), " RR_TOKEN_COLUMNS
                        " FROM api_tokens WHERE user_id = $1 "
                        "  AND (token_hash = decode($2, 'hex') OR ($3 <> '' AND left(token_prefix, length($3)) = $3)) "
                        "ORDER BY created_at, token_hash FOR UPDATE"};

// $1 user id  $2 token hash in hex
const db::Statement kDeleteToken{"ops_delete_token",
                                 "DELETE FROM api_tokens WHERE user_id = $1 AND token_hash = decode($2, 'hex')"};
// $1 user id
const db::Statement kCountTokens{"ops_count_tokens", "SELECT count(*) FROM api_tokens WHERE user_id = $1"};

TokenInfo token_info_from(const db::Row& row, int first) {
  return {row[first].as<std::string>(), row[first + 1].as<std::string>(), row[first + 2].as<std::string>()};
}

std::int64_t user_id_of(db::PooledConnection& conn, pqxx::transaction_base& tx, const std::string& email) {
  auto rows = conn.statements().exec(tx, kUserIdByEmail, email);
  if (rows.empty()) throw UserNotFound("no user with email " + email);
  return rows[0][0].as<std::int64_t>();
}

}  // namespace

bool is_token_prefix(std::string_view text) {
  if (!text.starts_with("rr_") || text.size() < 3 + kMinPrefixHexDigits || text.size() > kTokenPrefixLength) {
    return false;
  }
  for (char c : text.substr(3)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::vector<TokenInfo> list_tokens(db::PooledConnection& conn, const std::string& email) {
  db::Transaction tx(conn.raw(), conn.statement_timeout());
  auto rows = conn.statements().exec(tx, kListTokens, user_id_of(conn, tx, email));
  tx.commit();
  std::vector<TokenInfo> tokens;
  for (const auto& row : rows) tokens.push_back(token_info_from(row, 0));
  return tokens;
}

Revocation revoke_token(db::PooledConnection& conn, const std::string& email, const std::string& prefix_or_token) {
  const bool whole = looks_like_token(prefix_or_token);
  if (!whole && !is_token_prefix(prefix_or_token)) {
    throw InvalidUserInput("--revoke takes a whole token or its first characters: rr_ and 4 to 8 hex digits");
  }
  const std::string hash = whole ? to_hex(sha256(prefix_or_token)) : "";
  const std::string prefix = whole ? "" : prefix_or_token;

  Revocation revocation;
  db::Transaction tx(conn.raw(), conn.statement_timeout());
  const std::int64_t user_id = user_id_of(conn, tx, email);
  auto rows = conn.statements().exec(tx, kMatchTokens, user_id, hash, prefix);
  for (const auto& row : rows) revocation.matches.push_back(token_info_from(row, 1));
  if (rows.size() == 1) {
    conn.statements().exec(tx, kDeleteToken, user_id, rows[0][0].as<std::string>());
    revocation.result = Revocation::Result::revoked;
  } else {
    revocation.result = rows.empty() ? Revocation::Result::not_found : Revocation::Result::ambiguous;
  }
  revocation.remaining = conn.statements().exec(tx, kCountTokens, user_id)[0][0].as<std::int64_t>();
  tx.commit();
  return revocation;
}

}  // namespace rr::auth
