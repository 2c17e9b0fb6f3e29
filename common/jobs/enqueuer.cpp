// Claim, push, delete, commit: the enqueuer's one batch, and the connections it needs.
#include "common/jobs/enqueuer.hpp"

#include <poll.h>

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/base/log.hpp"
#include "common/daemon/drain.hpp"
#include "common/db/transaction.hpp"
#include "common/jobs/sidekiq_payload.hpp"
#include "common/metrics/registry.hpp"
#include "common/redis/server_role.hpp"

namespace rr::jobs {

namespace {

// Oldest first; SKIP LOCKED lets a second enqueuer take the next rows instead of waiting. A row
// staged since sql/012 has no stored jid: sql/functions/staged_jobs_jid.sql derives it from the
// row's id, the same on every re-push.
constexpr db::Statement kClaimJobs{"enqueuer_claim_jobs",
                                   "SELECT id, job_name, job_args::text, staged_jobs_jid(id, jid), "
                                   "(extract(epoch FROM created_at) * 1000000)::bigint "
                                   "FROM staged_jobs ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"};

constexpr db::Statement kDeleteJobs{"enqueuer_delete_jobs", "DELETE FROM staged_jobs WHERE id = ANY($1::bigint[])"};

std::int64_t now_epoch_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// From a few milliseconds (NOTIFY) through the idle poll (up to ENQUEUER_IDLE_SLEEP) to the
// minutes of an outage, which the lag alert (deploy/prometheus-alerts.yml, over 30 s) must see.
std::vector<double> lag_buckets() { return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}; }

// libpqxx 6 has no array parameters: a Postgres array literal of the ids.
std::string id_array(const std::vector<StagedJob>& jobs) {
  std::string text = "{";
  for (const auto& job : jobs) {
    if (text.size() > 1) text += ',';
    text += std::to_string(job.id);
  }
  text += '}';
  return text;
}

metrics::Counter& unacknowledged_batches(const std::string& reason, const std::string& queue) {
  return metrics::default_registry().counter(
      "rocket_rides_enqueuer_unacknowledged_batches_total",
      "Batches left staged because fewer Redis replicas than REDIS_MIN_REPLICAS acknowledged them "
      "(wait_short) or were online to take them (replicas_missing).",
      {{"queue", queue}, {"reason", reason}});
}

bool idle_connection_has_input(int socket) {
  if (socket < 0) return true;
  pollfd fd{socket, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0;
}

}  // namespace

Enqueuer::Enqueuer(EnqueuerSettings config)
    : config_(std::move(config)),
      redis_connector_(config_.redis, config_.redis_options),
      jobs_metric_(metrics::default_registry().counter("rocket_rides_enqueuer_jobs_total",
                                                       "Jobs pushed to Redis and removed from staged_jobs.",
                                                       {{"queue", config_.queue}})),
      lag_metric_(metrics::default_registry().histogram(
          "rocket_rides_enqueuer_lag_seconds",
          "Seconds from a job's staging transaction (PostgreSQL's clock) to its push to Redis (ours).",
          {{"queue", config_.queue}}, lag_buckets())),
      wait_short_metric_(unacknowledged_batches("wait_short", config_.queue)),
      replicas_missing_metric_(unacknowledged_batches("replicas_missing", config_.queue)) {
  if (!config_.listen_url.empty()) listener_.emplace(config_.listen_url);
}

Enqueuer::~Enqueuer() = default;

db::Connection& Enqueuer::database() {
  // Between passes an idle session receives nothing unless the server is ending it (a restart,
  // pg_terminate_backend, idle_session_timeout): input waiting here means "reconnect". Finding
  // out this way, rather than by failing a BEGIN, also avoids libpqxx 6.4 leaking a result
  // on that failure path.
  if (database_ && idle_connection_has_input(database_->sock())) {
    log::warn("database session closed by the server, reconnecting");
    statements_.reset();
    database_.reset();
  }
  if (!database_) {
    database_ = std::make_unique<db::Connection>(config_.database.url);
    statements_.emplace(*database_, config_.database.session.statements);  // a new session has nothing prepared
  }
  return *database_;
}

redis::Connection& Enqueuer::redis() {
  if (redis_ && redis_->broken()) redis_.reset();
  if (!redis_) redis_.emplace(redis_connector_.connect());
  return *redis_;
}

std::int64_t Enqueuer::move_batch() {
  db::Transaction transaction(database(), config_.database.session.statement_timeout);
  db::Result rows = statements_->exec(transaction, kClaimJobs, config_.loop.batch_size);
  if (rows.empty()) return 0;  // the destructor rolls back a transaction that changed nothing

  std::vector<StagedJob> jobs;
  jobs.reserve(rows.size());
  for (const auto& row : rows) {
    jobs.push_back({row[0].as<std::int64_t>(), row[1].as<std::string>(), row[2].as<std::string>(),
                    row[3].as<std::string>(), row[4].as<std::int64_t>()});
  }

  // Sidekiq's own bulk push: SADD the queue name, one LPUSH with every payload. One round trip,
  // and the LPUSH is atomic, so a batch is either in Redis or not.
  const std::int64_t enqueued_at = now_epoch_us();
  std::vector<std::string> push{"LPUSH", "queue:" + config_.queue};
  push.reserve(jobs.size() + 2);
  for (const auto& job : jobs) push.push_back(sidekiq_payload(job, config_.queue, enqueued_at, config_.timestamps));
  const auto& replicas = config_.replicas;
  if (replicas.enabled() && replicas_short_) {
    try {
      replicas.check_connected(redis::query_role(redis()));
    } catch (const ReplicasShort&) {
      replicas_missing_metric_.inc();
      throw;
    }
  }
  std::vector<std::vector<std::string>> commands{{"SADD", "queues", config_.queue}, std::move(push)};
  if (replicas.enabled()) commands.push_back(replicas.wait_command());
  auto replies = redis().pipeline(commands);
  // LPUSH answers the list's new length: at least what we pushed, or the push did not happen.
  if (replies.at(1).as_integer() < static_cast<long long>(jobs.size())) {
    throw redis::RedisError("LPUSH to queue:" + config_.queue + " reported a shorter list than the batch");
  }
  if (replicas.enabled()) {
    try {
      replicas.check_acknowledged(replies.at(2).as_integer(), jobs.size());
    } catch (const ReplicasShort&) {
      // The batch is on the master, maybe on some replicas; rolling back sends it again later
      // with the same jids, a duplicate Sidekiq tolerates, where a loss it could not.
      replicas_short_ = true;
      wait_short_metric_.inc();
      throw;
    }
    replicas_short_ = false;
  }

  db::Result deleted = statements_->exec(transaction, kDeleteJobs, id_array(jobs));
  if (deleted.affected_rows() != jobs.size()) {
    // Cannot happen while we hold the row locks; if it does, roll back rather than guess.
    throw std::logic_error("deleted " + std::to_string(deleted.affected_rows()) + " staged jobs of " +
                           std::to_string(jobs.size()) + " claimed");
  }
  if (before_commit_) before_commit_();
  transaction.commit();
  // After the commit, so a batch that rolls back (and goes again) is measured once, when it lands.
  for (const auto& job : jobs) lag_metric_.observe(static_cast<double>(enqueued_at - job.created_at_us) / 1e6);
  return static_cast<std::int64_t>(jobs.size());
}

EnqueueReport Enqueuer::run_once() {
  EnqueueReport report;
  try {
    report.enqueued = move_batch();
  } catch (const redis::RedisError&) {
    if (redis_ && redis_->broken()) redis_.reset();
    throw;
  } catch (const pqxx::broken_connection&) {
    database_.reset();
    throw;
  } catch (const pqxx::in_doubt_error&) {
    // The commit's outcome is unknown: the jobs are in Redis and may still be staged; they will
    // go again with the same jid. The connection is not trusted after this.
    database_.reset();
    throw;
  }
  if (report.enqueued > 0) {
    report.passes = 1;
    jobs_metric_.inc(static_cast<double>(report.enqueued));
    log::info("enqueued jobs", {{"enqueued", report.enqueued}, {"queue", config_.queue}});
  }
  return report;
}

EnqueueReport Enqueuer::drain(std::int64_t max_batches) {
  EnqueueReport total;
  daemon::drain(
      [&] {
        EnqueueReport report = run_once();
        total.enqueued += report.enqueued;
        total.passes += report.passes;
        return daemon::PassOutcome{report.enqueued > 0, report.full_batch(config_.loop.batch_size)};
      },
      max_batches);
  return total;
}

bool Enqueuer::wait_for_jobs(std::chrono::milliseconds timeout) {
  if (!listener_) throw std::logic_error("wait_for_jobs without a LISTEN channel");
  return listener_->wait(timeout);
}

}  // namespace rr::jobs
