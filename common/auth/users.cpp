// User creation and token authentication.
#include "common/auth/users.hpp"

#include "common/db/transaction.hpp"

#include "common/auth/tokens.hpp"

namespace rr::auth {
namespace {

const db::Statement kAuthenticate{
    "auth_user_by_token",
    "SELECT u.id, u.email, u.stripe_customer_id FROM api_tokens t JOIN users u ON u.id = t.user_id "
    "WHERE t.token_hash = $1"};

void validate(const std::string& email, const std::string& stripe_customer_id) {
  if (email.size() < 3 || email.size() > 255 || email.find('@') == std::string::npos) {
    throw InvalidUserInput("--email must be an address of 3 to 255 characters containing '@'");
  }
  if (stripe_customer_id.empty() || stripe_customer_id.size() > 255) {
    throw InvalidUserInput("--stripe-customer must be 1 to 255 characters");
  }
}

std::string insert_token(pqxx::transaction_base& tx, std::int64_t user_id) {
  std::string token = generate_token();
  pqxx::binarystring hash(sha256(token));
  tx.exec_params("INSERT INTO api_tokens (token_hash, user_id, token_prefix) VALUES ($1, $2, $3)", hash, user_id,
                 token_prefix(token));
  return token;
}

}  // namespace

CreatedUser create_user(pqxx::connection& conn, const std::string& email, const std::string& stripe_customer_id,
                        std::chrono::milliseconds statement_timeout) {
  validate(email, stripe_customer_id);
  db::Transaction tx(conn, statement_timeout);
  auto rows = tx.exec_params(
      "INSERT INTO users (email, stripe_customer_id) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING RETURNING id",
      email, stripe_customer_id);
  if (rows.empty()) throw UserExists("a user with email " + email + " already exists");
  User user{rows[0][0].as<std::int64_t>(), email, stripe_customer_id};
  std::string token = insert_token(tx, user.id);
  tx.commit();
  return {user, token};
}

std::string issue_token(pqxx::connection& conn, const std::string& email, std::chrono::milliseconds statement_timeout) {
  db::Transaction tx(conn, statement_timeout);
  auto rows = tx.exec_params("SELECT id FROM users WHERE email = $1", email);
  if (rows.empty()) throw UserNotFound("no user with email " + email);
  std::string token = insert_token(tx, rows[0][0].as<std::int64_t>());
  tx.commit();
  return token;
}

std::optional<User> authenticate(db::ConnectionPool::Lease& conn, std::string_view token) {
  if (!looks_like_token(token)) return std::nullopt;
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, kAuthenticate, db::bytes(sha256(token)));
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return User{rows[0][0].as<std::int64_t>(), rows[0][1].as<std::string>(), rows[0][2].as<std::string>()};
}

}  // namespace rr::auth
