// A bounded pool of libpqxx connections with per-connection prepared statements.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace rr::db {

// A named SQL statement, prepared lazily once per connection. Define these as constants next to
// the code that owns them.
struct Statement {
  const char* name;
  const char* sql;
};

class PoolExhausted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PooledConnection {
 public:
  explicit PooledConnection(const std::string& url);
  pqxx::connection& raw() { return conn_; }
  // Makes sure `statement` is prepared here; returns its name for exec_prepared.
  const char* prepare(const Statement& statement);

 private:
  pqxx::connection conn_;
  std::unordered_set<std::string> prepared_;
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
    pqxx::connection& conn() { return conn_->raw(); }
    PooledConnection& pooled() { return *conn_; }
    const char* prepare(const Statement& statement) { return conn_->prepare(statement); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<PooledConnection> conn_;
  };

  ConnectionPool(std::string url, std::size_t size, std::chrono::milliseconds checkout_timeout);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Waits up to the checkout timeout for a free slot; opens a connection lazily. Throws
  // PoolExhausted on timeout and pqxx::broken_connection when the database cannot be reached.
  Lease acquire();
  PoolStats stats() const;
  const std::string& url() const { return url_; }

 private:
  void release(std::unique_ptr<PooledConnection> conn);

  std::string url_;
  std::size_t size_;
  std::chrono::milliseconds checkout_timeout_;
  mutable std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<PooledConnection>> idle_;
  std::size_t in_use_ = 0;
  std::size_t waiting_ = 0;
};

}  // namespace rr::db
