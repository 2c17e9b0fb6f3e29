// Users and their API tokens in the database.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>

#include "common/db/connection_pool.hpp"
#include "common/db/session_options.hpp"

namespace rr::auth {

struct User {
  std::int64_t id;
  std::string email;
  std::string stripe_customer_id;
};

class UserExists : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class UserNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class InvalidUserInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CreatedUser {
  User user;
  std::string token;  // shown once; only its hash is stored
};

// Creates the user and a first token in one transaction. Throws UserExists for a taken email.
CreatedUser create_user(pqxx::connection& conn, const std::string& email, const std::string& stripe_customer_id,
                        std::chrono::milliseconds statement_timeout = db::SessionOptions{}.statement_timeout);
// Adds a new token for an existing user (the `user token` subcommand). Throws UserNotFound.
std::string issue_token(pqxx::connection& conn, const std::string& email,
                        std::chrono::milliseconds statement_timeout = db::SessionOptions{}.statement_timeout);
// The user a bearer token belongs to, or nothing. One indexed lookup by hash.
std::optional<User> authenticate(db::ConnectionPool::Lease& conn, std::string_view token);

}  // namespace rr::auth
