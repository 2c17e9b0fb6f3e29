// The enqueuer's wake-up: a dedicated connection LISTENing on the staged_jobs channel, which the
// schema's trigger NOTIFYs when a staging transaction commits.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace rr::jobs {

class StagedJobsListener {
 public:
  explicit StagedJobsListener(std::string database_url);
  ~StagedJobsListener();
  StagedJobsListener(const StagedJobsListener&) = delete;
  StagedJobsListener& operator=(const StagedJobsListener&) = delete;

  // Waits up to `timeout` for a notification. Returns true when one arrived, and also right after
  // (re)connecting, since rows committed before the LISTEN took effect sent their NOTIFY to nobody.
  // Returns false on timeout or a stop request. Throws pqxx::broken_connection when the
  // connection fails; the next call reconnects.
  bool wait(std::chrono::milliseconds timeout);

  bool connected() const { return channel_ != nullptr; }

 private:
  struct Channel;
  std::string database_url_;
  std::unique_ptr<Channel> channel_;
};

}  // namespace rr::jobs
