// The lock that lets one migrator at a time run a migration outside a transaction, held from
// before its first statement until it is recorded, also through a transaction-pooling PgBouncer.
#pragma once

#include <chrono>
#include <memory>
#include <pqxx/pqxx>
#include <stop_token>
#include <string>
#include <thread>

namespace rr::db {

// Such a migration is many statements, each its own transaction, on the migrator's connection:
// a transaction-level lock taken there would end with the first of them, and a session-level one
// would stay on whichever server session a transaction-pooling PgBouncer lent for that statement.
// So the lock is a transaction-level advisory lock held by an open transaction on a connection of
// its own, opened with the migrator's connection string: PgBouncer keeps one server session for a
// client for as long as its transaction lasts, so the lock lives exactly as long as this object
// (or as the migrator: a closed client connection ends the transaction).
//
// Two rules keep the holder from deadlocking with the CREATE INDEX CONCURRENTLY it protects, which
// waits for every transaction in the database that holds a snapshot (a wait PostgreSQL's deadlock
// detector cannot see through, since what the holder waits for is its own client):
//  - waiting is polling: each try is a short transaction (pg_try_advisory_xact_lock, then
//    ROLLBACK), never a blocked statement. A migrator blocked in pg_advisory_xact_lock holds a
//    snapshot the running index build waits for, while it waits for the lock that build's
//    migrator holds. Polling also pins no PgBouncer server session while waiting: blocked waiters
//    could take every session of the pool, leaving none for the holder's own statements.
//  - the holder, READ COMMITTED and idle in its transaction, has no snapshot (pg_stat_activity's
//    backend_xmin is null), and its heartbeat is SHOW, which takes none either. A heartbeat of
//    SELECT 1 was seen to hang CREATE INDEX CONCURRENTLY until its statement timeout.
// The heartbeat (every second) keeps the idle transaction from PgBouncer's idle_transaction_timeout
// and PostgreSQL's idle_in_transaction_session_timeout during a long index build.
class MigrationFileLock {
 public:
  // Opens the connection (`conninfo`, as the migrator's) and tries every kPollInterval until the
  // lock is taken, saying once that it waits for another migrator. Every statement is bounded by
  // `statement_timeout`; the wait as a whole is not: the lock's holder is alive or its transaction
  // ended with its connection.
  MigrationFileLock(const std::string& conninfo, int version, std::chrono::milliseconds statement_timeout);
  // Ends the transaction, releasing the lock.
  ~MigrationFileLock();
  MigrationFileLock(const MigrationFileLock&) = delete;
  MigrationFileLock& operator=(const MigrationFileLock&) = delete;

  // Throws std::runtime_error when the holding transaction ended before now (its connection was
  // closed): another migrator may have run the same statements meanwhile, so the migration must
  // not be recorded as applied by this run. Stops the heartbeat; call it once, right before
  // recording the migration.
  void confirm_held();

  static constexpr std::chrono::milliseconds kPollInterval{50};
  static constexpr std::chrono::milliseconds kHeartbeatInterval{1000};

 private:
  void beat(std::stop_token stop);

  int version_;
  pqxx::connection conn_;
  std::unique_ptr<pqxx::transaction_base> holder_;
  std::string lost_;  // why the heartbeat found the transaction gone; written by the heartbeat only
  std::jthread heartbeat_;
};

}  // namespace rr::db
