// The fence watcher: one indexed query every few seconds (write_fences_open), one log line when
// writes close and one when they reopen.
#include "common/api/write_fence_watch.hpp"

#include <memory>
#include <pqxx/pqxx>

#include "common/base/log.hpp"
#include "common/db/transaction.hpp"

namespace rr::api {
namespace {

constexpr const char* kOpenFence = "SELECT reason FROM write_fences WHERE reopened_at IS NULL ORDER BY id LIMIT 1";
constexpr std::chrono::seconds kCheckTimeout{2};

}  // namespace

WriteFenceWatch::WriteFenceWatch(std::string url, std::chrono::milliseconds interval)
    : url_(std::move(url)), interval_(interval) {
  // Checked once before the first request: an API started right after a restore never lets a
  // write through before it knows.
  std::optional<std::string> previous;
  check(previous);
  thread_ = std::thread([this] { run(); });
}

WriteFenceWatch::~WriteFenceWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::optional<std::string> WriteFenceWatch::closed_because() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void WriteFenceWatch::check(std::optional<std::string>& previous) {
  std::optional<std::string> reason;
  try {
    pqxx::connection conn(url_);
    db::Transaction tx(conn, kCheckTimeout);
    auto rows = tx.exec(kOpenFence);
    tx.commit();
    if (!rows.empty()) reason = rows[0][0].as<std::string>();
  } catch (const std::exception& e) {
    log::debug("write fence check failed; keeping the last answer", {{"error", e.what()}});
    return;
  }
  if (reason && !previous) log::warn("writes closed by a write fence", {{"reason", *reason}});
  if (!reason && previous) log::info("writes reopened", {{"fence_reason", *previous}});
  previous = reason;
  std::lock_guard lock(mutex_);
  reason_ = std::move(reason);
}

void WriteFenceWatch::run() {
  std::optional<std::string> previous = closed_because();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (wake_.wait_for(lock, interval_, [this] { return stopping_; })) return;
    }
    check(previous);
  }
}

}  // namespace rr::api
