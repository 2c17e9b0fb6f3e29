// Connection pool: connections are opened on demand and dropped when they come back broken.
#include "common/db/connection_pool.hpp"

namespace rr::db {

PooledConnection::PooledConnection(const std::string& url) : conn_(url) {}

const char* PooledConnection::prepare(const Statement& statement) {
  if (prepared_.insert(statement.name).second) {
    try {
      conn_.prepare(statement.name, statement.sql);
    } catch (...) {
      prepared_.erase(statement.name);
      throw;
    }
  }
  return statement.name;
}

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

ConnectionPool::ConnectionPool(std::string url, std::size_t size, std::chrono::milliseconds checkout_timeout)
    : url_(std::move(url)), size_(size), checkout_timeout_(checkout_timeout) {}

ConnectionPool::Lease ConnectionPool::acquire() {
  std::unique_lock lock(mutex_);
  ++waiting_;
  bool ok = available_.wait_for(lock, checkout_timeout_, [&] { return !idle_.empty() || in_use_ < size_; });
  --waiting_;
  if (!ok) throw PoolExhausted("no database connection free within the checkout timeout");
  ++in_use_;
  if (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(conn));
  }
  lock.unlock();
  // Connect outside the lock: it is a network round trip or several.
  try {
    return Lease(this, std::make_unique<PooledConnection>(url_));
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
