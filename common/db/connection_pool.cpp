// Connection pool: connections are opened on demand and dropped when they come back broken.
#include "common/db/connection_pool.hpp"

#include <poll.h>

namespace rr::db {

namespace {

// An idle session receives nothing unless its server is ending it (a PostgreSQL or PgBouncer
// restart, pg_terminate_backend): input or end of file waiting on an idle connection means it is
// dead. One poll() instead of a failed statement in the middle of a request.
bool idle_session_was_closed(pqxx::connection& conn) {
  int socket = conn.sock();
  if (socket < 0) return true;
  pollfd fd{socket, POLLIN, 0};
  return ::poll(&fd, 1, 0) != 0;
}

}  // namespace

ConnectionPool::Lease::~Lease() {
  if (pool_ && conn_) pool_->release(std::move(conn_));
}

ConnectionPool::Lease& ConnectionPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (pool_ && conn_) pool_->release(std::move(conn_));
    pool_ = other.pool_;
    conn_ = std::move(other.conn_);
  }
  return *this;
}

PooledConnection::PooledConnection(const std::string& url, const SessionOptions& options)
    : conn_(url), statements_(options.statements), statement_timeout_(per_transaction_timeout(options)) {
  // libpqxx runs the SET now and again on any reconnect of this connection object.
  if (session_carries_timeout(options)) {
    conn_.set_variable("statement_timeout", std::to_string(options.statement_timeout.count()));
  }
}

ConnectionPool::ConnectionPool(std::string url, SessionOptions options, std::size_t size,
                               std::chrono::milliseconds checkout_timeout)
    : url_(std::move(url)), options_(options), size_(size), checkout_timeout_(checkout_timeout) {}

ConnectionPool::Lease ConnectionPool::acquire() { return acquire(checkout_timeout_); }

ConnectionPool::Lease ConnectionPool::acquire(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ++waiting_;
  bool ok = available_.wait_for(lock, timeout, [&] { return !idle_.empty() || in_use_ < size_; });
  --waiting_;
  if (!ok) throw PoolExhausted("no database connection free within the checkout timeout");
  ++in_use_;
  std::vector<std::unique_ptr<PooledConnection>> dead;
  while (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    if (!idle_session_was_closed(conn->raw())) {
      lock.unlock();  // the dead ones close outside the lock
      return Lease(this, std::move(conn));
    }
    dead.push_back(std::move(conn));
  }
  lock.unlock();
  dead.clear();
  // Connect outside the lock: it is a network round trip or several.
  try {
    return Lease(this, std::make_unique<PooledConnection>(url_, options_));
  } catch (...) {
    std::lock_guard relock(mutex_);
    --in_use_;
    available_.notify_one();
    throw;
  }
}

void ConnectionPool::release(std::unique_ptr<PooledConnection> conn) {
  // A connection that broke mid-use is dropped; the next acquire opens a fresh one.
  bool healthy = conn->raw().is_open();
  std::lock_guard lock(mutex_);
  --in_use_;
  if (healthy) idle_.push_back(std::move(conn));
  available_.notify_one();
}

PoolStats ConnectionPool::stats() const {
  std::lock_guard lock(mutex_);
  return {size_, in_use_, idle_.size(), waiting_};
}

}  // namespace rr::db
