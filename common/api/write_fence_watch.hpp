// Whether writes are closed by a write fence (a row of write_fences not yet reopened: a restore
// closes one until reconciliation has covered the restored window). One thread per process asks
// at start and every few seconds on a connection of its own, so no request pays for the check.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rr::api {

class WriteFenceWatch {
 public:
  WriteFenceWatch(std::string url, std::chrono::milliseconds interval);
  ~WriteFenceWatch();
  WriteFenceWatch(const WriteFenceWatch&) = delete;
  WriteFenceWatch& operator=(const WriteFenceWatch&) = delete;

  // The open fence's reason, or nothing while writes are open. What the last check saw: a check
  // that fails (the database away) keeps the last answer.
  std::optional<std::string> closed_because() const;

 private:
  void check(std::optional<std::string>& previous);
  void run();

  std::string url_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::optional<std::string> reason_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rr::api
