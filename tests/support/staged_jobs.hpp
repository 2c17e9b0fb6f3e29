// The staged_jobs table as the enqueuer tests see it: stage jobs, and read which are still staged.
#pragma once

#include <chrono>
#include <pqxx/pqxx>
#include <set>
#include <string>

#include "support/test_database.hpp"

namespace rr::test {

// Wakes the enqueuer as the product's stagers do after their commit (EnqueuerWakeup): since
// migration 007 no trigger NOTIFYs on staged_jobs.
void notify_staged_jobs(TestDatabase& db);
// Commits `count` jobs in one statement, then NOTIFYs like a stager.
void stage_jobs(TestDatabase& db, int count, const std::string& name = "send_ride_receipt",
                const std::string& args = "[1]");
// The jids of the jobs still staged.
std::set<std::string> staged_jids(TestDatabase& db);
long staged_count(TestDatabase& db);

// A session LISTENing on staged_jobs, as the enqueuer's does, that counts what it hears.
class StagedJobsEar {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StagedJobsEar(const std::string& direct_url);
  ~StagedJobsEar();
  StagedJobsEar(const StagedJobsEar&) = delete;
  StagedJobsEar& operator=(const StagedJobsEar&) = delete;

  // Waits until `count` notifications were heard in all, or the timeout; returns how many were.
  int wait_for(int count, std::chrono::milliseconds timeout);
  // How many were heard so far, without waiting.
  int heard();
  Clock::time_point last_heard_at() const { return receiver_.last; }

 private:
  struct Receiver final : pqxx::notification_receiver {
    Receiver(pqxx::connection_base& connection, int& heard);
    void operator()(const std::string&, int) override;
    int& heard;
    Clock::time_point last;
  };
  int heard_ = 0;
  pqxx::connection connection_;
  Receiver receiver_;  // declared after the connection, so destroyed before it
};

}  // namespace rr::test
