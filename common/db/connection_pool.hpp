// A bounded pool of database sessions (db::Connection: ours, lent to libpqxx for transactions),
// each running named statements in the pool's mode.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/db/connection.hpp"
#include "common/db/prepared_calls.hpp"
#include "common/db/result.hpp"
#include "common/db/session_options.hpp"
#include "common/db/statements.hpp"
#include "common/fiber/fiber.hpp"
#include "common/fiber/kept_socket_watch.hpp"

namespace rr::db {

class PoolExhausted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PooledConnection {
 public:
  // Connects; a session of our own gets its statement bound here (session_options.hpp).
  PooledConnection(const std::string& url, const SessionOptions& options);
  Connection& raw() { return conn_; }
  SessionStatements& statements() { return statements_; }
  // The bound a transaction on this connection must SET LOCAL itself: 0 when the session already
  // carries DATABASE_STATEMENT_TIMEOUT (per_transaction_timeout). Pass it to db::Transaction and
  // db::run_one_trip as is.
  std::chrono::milliseconds statement_timeout() const { return statement_timeout_; }
  // How long a call on a fiber waits for its answer (SessionOptions::call_timeout; 0: no bound).
  std::chrono::milliseconds call_timeout() const { return call_timeout_; }
  // The libpq socket's registration with the I/O thread that last waited on it (one-trip calls
  // on a fiber), kept from one call to the next.
  fiber::KeptSocketWatch& socket_watch() { return socket_watch_; }
  // The one-trip calls this session has prepared (prepared-statement mode, on a fiber).
  PreparedCalls& prepared_calls() { return prepared_calls_; }

 private:
  Connection conn_;
  SessionStatements statements_;
  PreparedCalls prepared_calls_;
  std::chrono::milliseconds statement_timeout_;
  std::chrono::milliseconds call_timeout_;
  // After conn_, so destroyed before it: the dup is closed before libpq closes its socket, and
  // the server sees the connection end when libpq ends it.
  fiber::KeptSocketWatch socket_watch_;
};

struct PoolStats {
  std::size_t size;
  std::size_t in_use;
  std::size_t idle;
  std::size_t waiting;
};

class ConnectionPool {
 public:
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<PooledConnection> conn) : pool_(pool), conn_(std::move(conn)) {}
    Lease(Lease&& other) noexcept = default;
    // Gives back the connection held so far, then takes over `other`'s.
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    Connection& conn() { return conn_->raw(); }
    PooledConnection& pooled() { return *conn_; }
    SessionStatements& statements() { return conn_->statements(); }
    // For db::Transaction: the bound on each statement of this session's transactions.
    std::chrono::milliseconds statement_timeout() const { return conn_->statement_timeout(); }
    // Runs `statement` in `tx` (a transaction on this connection) in the pool's statement mode.
    template <typename... Args>
    Result exec(pqxx::transaction_base& tx, const Statement& statement, const Args&... args) {
      return conn_->statements().exec(tx, statement, args...);
    }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<PooledConnection> conn_;
  };

  ConnectionPool(std::string url, SessionOptions options, std::size_t size, std::chrono::milliseconds checkout_timeout);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Waits up to the checkout timeout for a free slot; opens a connection lazily. Throws
  // PoolExhausted on timeout and pqxx::broken_connection when the database cannot be reached.
  // On a request fiber the wait suspends the fiber (the I/O thread serves others) and the connect
  // runs on the worker pool; elsewhere the thread blocks.
  Lease acquire();
  // The same with a wait of its own, for a background check that must not stall behind requests.
  Lease acquire(std::chrono::milliseconds timeout);
  PoolStats stats() const;
  const std::string& url() const { return url_; }

 private:
  // One caller waiting for a slot: a fiber (waker set) or a thread (woken through `granted_cv`).
  struct Waiter {
    std::shared_ptr<fiber::Waker> waker;
    std::condition_variable granted_cv;
    bool granted = false;  // a slot was counted in use for it by the one who freed it
  };

  void release(std::unique_ptr<PooledConnection> conn);
  // Waits in line, the mutex held by `lock` on entry and on return; true when a slot was granted.
  bool wait_in_line(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline);
  // A slot came free (the mutex held): the first in line gets it, counted in use on its behalf, so
  // nobody arriving later (a fiber on the thread that just freed it, say) takes it first.
  void hand_on_free_slot();

  std::string url_;
  SessionOptions options_;
  std::size_t size_;
  std::chrono::milliseconds checkout_timeout_;
  mutable std::mutex mutex_;
  // Threads and fibers waiting for a slot (PoolStats::waiting), served first come first served. A
  // fiber never waits on a condition variable: that would block its I/O thread and every other
  // fiber on it.
  std::deque<std::shared_ptr<Waiter>> waiters_;
  std::vector<std::unique_ptr<PooledConnection>> idle_;
  std::size_t in_use_ = 0;
};

}  // namespace rr::db
