// The enqueuer's settings, parsed once from the environment: where Postgres and Redis are, which
// Sidekiq queue to push to, and the loop's knobs (ENQUEUER_*); the shape every daemon shares
// (daemon::DaemonSettings in common/daemon/daemon_main.hpp).
#pragma once

#include <string>

#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/jobs/replica_acknowledgement.hpp"
#include "common/jobs/sidekiq_payload.hpp"
#include "common/redis/connection.hpp"
#include "common/redis/master_connector.hpp"

namespace rr::jobs {

struct EnqueuerSettings {
  config::DatabaseSettings database;  // DATABASE_URL, DATABASE_PREPARED_STATEMENTS
  // Where the wake-up LISTENs: LISTEN_DATABASE_URL, else DATABASE_URL while prepared statements
  // are on. Empty (statements off, no LISTEN_DATABASE_URL): no LISTEN, the loop polls every
  // idle sleep, since a LISTEN through a transaction-pooling PgBouncer silently stops hearing.
  std::string listen_url;
  // REDIS_URL, or REDIS_SENTINELS and REDIS_SENTINEL_MASTER (REDIS_URL then optional, for the
  // database number and the password only).
  redis::RedisTarget redis;
  redis::ConnectOptions redis_options;
  ReplicaAcknowledgement replicas;  // REDIS_MIN_REPLICAS, default 0
  std::string queue = "default";    // ENQUEUER_QUEUE: the Sidekiq queue, pushed to queue:<name>
  // SIDEKIQ_TIMESTAMPS: `seconds` (default; every Sidekiq reads it) or `milliseconds` (Sidekiq 8's
  // own form, for fleets that run only Sidekiq 8).
  SidekiqTimestamps timestamps = SidekiqTimestamps::seconds;
  // ENQUEUER_BATCH_SIZE (rows per transaction and per Redis round trip), ENQUEUER_IDLE_SLEEP
  // (default 5 s with a LISTEN: only the fallback poll, since NOTIFY wakes the loop; 0.25 s
  // without one, when it is the poll), ENQUEUER_MAX_BACKOFF.
  config::LoopSettings loop;

  static EnqueuerSettings from_env(const config::Environment& env);
};

// The idle sleep when ENQUEUER_IDLE_SLEEP is unset, in seconds: with a LISTEN, and without.
inline constexpr double kDefaultEnqueuerIdleSleep = 5.0;
inline constexpr double kDefaultEnqueuerPollInterval = 0.25;

}  // namespace rr::jobs
