// The readiness pinger: one connection, one bounded SELECT 1 a second, the time of the last success.
#include "common/api/database_readiness.hpp"

#include <memory>
#include <pqxx/pqxx>

#include "common/base/log.hpp"
#include "common/db/transaction.hpp"

namespace rr::api {

namespace {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

DatabaseReadiness::DatabaseReadiness(std::string url, std::chrono::milliseconds interval,
                                     std::chrono::milliseconds stale_after)
    : url_(std::move(url)), interval_(interval), stale_after_(stale_after) {
  thread_ = std::thread([this] { run(); });
}

DatabaseReadiness::~DatabaseReadiness() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool DatabaseReadiness::database_reachable() const {
  {
    std::unique_lock lock(mutex_);
    first_answer_.wait_for(lock, stale_after_, [this] { return answered_once_; });
  }
  auto last = last_success_ms_.load();
  return last >= 0 && steady_ms() - last <= stale_after_.count();
}

void DatabaseReadiness::run() {
  std::unique_ptr<pqxx::connection> conn;
  bool was_reachable = true;
  for (;;) {
    bool ok = false;
    try {
      if (!conn || !conn->is_open()) conn = std::make_unique<pqxx::connection>(url_);
      // A ping that takes longer than the staleness bound has already made us "not ready".
      db::Transaction tx(*conn, stale_after_);
      tx.exec("SELECT 1");
      tx.commit();
      ok = true;
    } catch (const std::exception& e) {
      conn.reset();  // a fresh session next time (the server may have ended this one)
      if (was_reachable) log::warn("readiness: database ping failed", {{"error", e.what()}});
    }
    if (ok) {
      last_success_ms_ = steady_ms();
      if (!was_reachable) log::info("readiness: database answers again");
    }
    was_reachable = ok;
    std::unique_lock lock(mutex_);
    if (!answered_once_) {
      answered_once_ = true;
      first_answer_.notify_all();
    }
    if (wake_.wait_for(lock, interval_, [this] { return stopping_; })) return;
  }
}

}  // namespace rr::api
