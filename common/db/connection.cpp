// The session's lifetime: opened by our policy, closed by it.
#include "common/db/connection.hpp"

#include <new>

namespace rr::db {
namespace detail {

OwnedSession::handle OwnedSession::do_startconnect(handle orig) {
  // A session already open stays (libpqxx asks again on every activation).
  if (orig != nullptr) return remembered(orig);
  PGconn* conn = PQconnectdb(options().c_str());
  if (conn == nullptr) throw std::bad_alloc();
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    throw pqxx::broken_connection(message);
  }
  return remembered(conn);
}

OwnedSession::handle OwnedSession::do_disconnect(handle orig) noexcept {
  if (orig != nullptr) PQfinish(orig);
  return remembered(nullptr);
}

}  // namespace detail

Connection::Connection(const std::string& url) : pqxx::connection_base(policy_), policy_(url) { init(); }

Connection::~Connection() noexcept { close(); }

}  // namespace rr::db
