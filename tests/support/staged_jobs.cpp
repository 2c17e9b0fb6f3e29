#include "support/staged_jobs.hpp"

namespace rr::test {

void stage_jobs(TestDatabase& db, int count, const std::string& name, const std::string& args) {
  pqxx::work txn(db.conn());
  txn.exec_params("INSERT INTO staged_jobs (job_name, job_args) SELECT $1, $2::jsonb FROM generate_series(1, $3)", name,
                  args, count);
  txn.commit();
  notify_staged_jobs(db);
}

void notify_staged_jobs(TestDatabase& db) {
  pqxx::nontransaction txn(db.conn());
  txn.exec("SELECT pg_notify('staged_jobs', '')");
}

std::set<std::string> staged_jids(TestDatabase& db) {
  pqxx::work txn(db.conn());
  std::set<std::string> jids;
  for (const auto& row : txn.exec("SELECT staged_jobs_jid(id, jid) FROM staged_jobs"))
    jids.insert(row[0].as<std::string>());
  return jids;
}

long staged_count(TestDatabase& db) { return std::stol(db.scalar("SELECT count(*) FROM staged_jobs")); }

StagedJobsEar::StagedJobsEar(const std::string& direct_url) : connection_(direct_url), receiver_(connection_, heard_) {}

// Closing first spares the receiver an UNLISTEN, as common/jobs/staged_jobs_listener.cpp does.
StagedJobsEar::~StagedJobsEar() { connection_.disconnect(); }

int StagedJobsEar::wait_for(int count, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  connection_.get_notifs();
  while (heard_ < count && Clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
    connection_.await_notification(static_cast<long>(left / 1000000), static_cast<long>(left % 1000000));
  }
  return heard_;
}

int StagedJobsEar::heard() {
  connection_.get_notifs();
  return heard_;
}

StagedJobsEar::Receiver::Receiver(pqxx::connection_base& connection, int& heard)
    : pqxx::notification_receiver(connection, "staged_jobs"), heard(heard) {}

void StagedJobsEar::Receiver::operator()(const std::string&, int) {
  ++heard;
  last = Clock::now();
}

}  // namespace rr::test
