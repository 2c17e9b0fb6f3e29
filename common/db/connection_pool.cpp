// Connection pool: connections are opened on demand and dropped when they come back broken.
#include "common/db/connection_pool.hpp"

#include <poll.h>

namespace rr::db {

namespace {

// An idle session receives nothing unless its server is ending it (a PostgreSQL or PgBouncer
// restart, pg_terminate_backend): input or end of file waiting on an idle connection means it is
// dead. One poll() instead of a failed statement in the middle of a request.
bool idle_session_was_closed(Connection& conn) {
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
    : conn_(url),
      statements_(conn_, options.statements),
      statement_timeout_(per_transaction_timeout(options)),
      call_timeout_(options.call_timeout) {
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
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  // Nobody passes those already in line, or under load the I/O thread's fibers, which run right
  // after a release on the same thread, would take every slot before a waiting thread woke.
  if (waiters_.empty() && in_use_ < size_) {
    ++in_use_;
  } else if (!wait_in_line(lock, deadline)) {
    throw PoolExhausted("no database connection free within the checkout timeout");
  }
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
  // Connect outside the lock: it is a network round trip or several, a blocking libpqxx connect
  // that on a fiber runs on a worker so the I/O thread goes on serving.
  try {
    return Lease(this, fiber::blocking([&] { return std::make_unique<PooledConnection>(url_, options_); }));
  } catch (...) {
    std::lock_guard relock(mutex_);
    --in_use_;
    hand_on_free_slot();
    throw;
  }
}

bool ConnectionPool::wait_in_line(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline) {
  auto waiter = std::make_shared<Waiter>();
  waiter->waker = fiber::Waker::for_this_fiber();
  waiters_.push_back(waiter);
  while (!waiter->granted && std::chrono::steady_clock::now() < deadline) {
    if (!waiter->waker) {
      waiter->granted_cv.wait_until(lock, deadline);
      continue;
    }
    // The mutex is never held across a fiber's suspension (a release on another fiber of this
    // thread needs it to grant us the slot). Only a grant wakes the waker, so a wake-up ends the wait.
    lock.unlock();
    waiter->waker->wait_until(deadline);
    lock.lock();
  }
  // A slot granted as the deadline passed is taken rather than lost.
  if (waiter->granted) return true;
  std::erase(waiters_, waiter);
  return false;
}

void ConnectionPool::hand_on_free_slot() {
  if (waiters_.empty() || in_use_ >= size_) return;
  auto waiter = std::move(waiters_.front());
  waiters_.pop_front();
  waiter->granted = true;
  ++in_use_;
  if (waiter->waker) {
    waiter->waker->wake();
  } else {
    waiter->granted_cv.notify_one();
  }
}

void ConnectionPool::release(std::unique_ptr<PooledConnection> conn) {
  // A connection that broke mid-use is dropped; the next acquire opens a fresh one.
  bool healthy = conn->raw().is_open();
  std::lock_guard lock(mutex_);
  --in_use_;
  if (healthy) idle_.push_back(std::move(conn));
  hand_on_free_slot();
}

PoolStats ConnectionPool::stats() const {
  std::lock_guard lock(mutex_);
  return {size_, in_use_, idle_.size(), waiters_.size()};
}

}  // namespace rr::db
