// A database session common/db owns: the libpq connection (PGconn) is opened and closed here,
// through the connection policy libpqxx 6 offers for exactly that (pqxx::connectionpolicy, the
// public extension point its own pqxx::connection is built on), and lent to libpqxx, which runs
// transactions on it. Whatever runs on the session without libpqxx (statements, one-trip calls on
// fibers) uses session(): the handle this object opened, with no reach into libpqxx's members.
#pragma once

#include <libpq-fe.h>

#include <pqxx/pqxx>
#include <string>

namespace rr::db {

namespace detail {
// Opens the session with PQconnectdb and closes it with PQfinish, as pqxx::connect_direct does,
// and remembers the handle: libpqxx stores exactly what these hooks return (every assignment of
// its handle goes through its policy), so handle() is always the session libpqxx uses.
class OwnedSession final : public pqxx::connectionpolicy {
 public:
  explicit OwnedSession(const std::string& url) : pqxx::connectionpolicy(url) {}
  handle do_startconnect(handle orig) override;
  handle do_completeconnect(handle orig) override { return remembered(orig); }
  handle do_dropconnect(handle orig) noexcept override { return remembered(orig); }
  handle do_disconnect(handle orig) noexcept override;
  PGconn* session() const { return session_; }

 private:
  handle remembered(handle orig) noexcept { return session_ = orig; }
  PGconn* session_ = nullptr;
};
}  // namespace detail

class Connection final : public pqxx::connection_base {
 public:
  // Connects now; a database that cannot be reached is pqxx::broken_connection.
  explicit Connection(const std::string& url);
  ~Connection() noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The libpq session (null only if it was closed). libpqxx expects it in blocking mode with no
  // results pending whenever libpqxx next uses it: whoever drives it directly leaves it so.
  PGconn* session() const { return policy_.session(); }

 private:
  // Declared after the base, as in pqxx::basic_connection_base: the base only keeps a reference
  // until init(), which runs once this is constructed.
  detail::OwnedSession policy_;
};

}  // namespace rr::db
