// One migrator at a time runs a migration outside a transaction: a polled advisory lock held by an
// open transaction on a connection of its own, kept alive by a snapshot-free heartbeat.
#include "common/db/migration_file_lock.hpp"

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "common/base/log.hpp"
#include "common/db/transaction.hpp"

namespace rr::db {
namespace {

// Not the id of the lock each migration transaction takes (migrations.cpp): those are taken by
// blocking, with a snapshot, and must never wait for this lock's holder, whose migrator's index
// build waits for every snapshot. Any constant works as long as every migrator uses the same one.
constexpr long long kOutsideTransactionLockId = 7204419530913184002LL;

// Both are simple queries on purpose. A parameterized one (PQexecParams) leaves its unnamed portal,
// and with it the snapshot it ran with, in place until the transaction's next statement: the
// holder then has a snapshot while idle, and an index build that starts meanwhile waits for the
// holder's whole transaction, which waits for that build. Seen: the build hung in a virtualxid wait.
const std::string kTryLock = "SELECT pg_try_advisory_xact_lock(" + std::to_string(kOutsideTransactionLockId) + ")";
// Takes no snapshot (PostgreSQL runs SHOW without one), so the index build never waits for it.
constexpr const char* kHeartbeat = "SHOW transaction_isolation";

}  // namespace

MigrationFileLock::MigrationFileLock(const std::string& conninfo, int version,
                                     std::chrono::milliseconds statement_timeout)
    : version_(version), conn_(conninfo) {
  for (bool said_so = false;;) {
    auto tx = std::make_unique<Transaction>(conn_, statement_timeout);
    if (tx->exec(kTryLock)[0][0].as<bool>()) {
      holder_ = std::move(tx);
      break;
    }
    tx->abort();
    if (!said_so) {
      log::info("waiting for another migrator running a migration outside a transaction", {{"version", version}});
      said_so = true;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  heartbeat_ = std::jthread([this](std::stop_token stop) { beat(stop); });
}

MigrationFileLock::~MigrationFileLock() {
  heartbeat_ = {};  // requests the stop and joins
  try {
    holder_->abort();  // ROLLBACK: the transaction held nothing but the lock
  } catch (const std::exception&) {
    // A closed connection released the lock already.
  }
}

void MigrationFileLock::beat(std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  // Nothing notifies `wake`: it is woken by the stop request, or not before the interval passed.
  while (!wake.wait_for(lock, stop, kHeartbeatInterval, [&stop] { return stop.stop_requested(); })) {
    try {
      holder_->exec(kHeartbeat);
    } catch (const std::exception& e) {
      lost_ = e.what();
      return;
    }
  }
}

void MigrationFileLock::confirm_held() {
  heartbeat_ = {};  // joined: lost_ is ours to read, and the connection ours to use
  if (lost_.empty()) {
    try {
      holder_->exec(kHeartbeat);
    } catch (const std::exception& e) {
      lost_ = e.what();
    }
  }
  if (!lost_.empty()) {
    throw std::runtime_error("migration " + std::to_string(version_) +
                             " ran outside a transaction but the lock that keeps other migrators from running it at "
                             "the same time was lost (" +
                             lost_ + "); it is not recorded: run migrate again");
  }
}

}  // namespace rr::db
