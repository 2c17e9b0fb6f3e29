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
  for (const auto& row : txn.exec("SELECT jid FROM staged_jobs")) jids.insert(row[0].as<std::string>());
  return jids;
}

long staged_count(TestDatabase& db) { return std::stol(db.scalar("SELECT count(*) FROM staged_jobs")); }

}  // namespace rr::test
