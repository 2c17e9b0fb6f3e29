// The enqueuer against real PostgreSQL and Redis: what is pushed, what stays staged when Redis or
// the database fails, two enqueuers racing, the NOTIFY wake-up, and the binary's exits.
// Needs DATABASE_URL and REDIS_URL; starts its own redis-server where a test stops Redis.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rapidjson/document.h>
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/daemon/stop_signal.hpp"
#include "common/http/client.hpp"
#include "common/jobs/enqueuer.hpp"
#include "common/jobs/sidekiq_payload.hpp"
#include "common/metrics/registry.hpp"
#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/staged_jobs.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::jobs::Enqueuer;
using rr::jobs::EnqueuerSettings;
using rr::redis::Connection;
using rr::redis::parse_redis_url;

namespace {

using rr::test::RedisServer;

rr::test::TestDatabase& database() {
  static rr::test::TestDatabase db;
  return db;
}

// Each case gets an empty table and a queue name nobody else uses.
struct Fixture {
  Fixture() : queue("test-" + rr::test::random_suffix(8)), redis_url(rr::test::require_env("REDIS_URL")) {
    database().truncate_all();
  }
  ~Fixture() {
    try {
      Connection redis(parse_redis_url(redis_url));
      redis.pipeline({{"DEL", "queue:" + queue}, {"SREM", "queues", queue}});
    } catch (const std::exception&) {
    }
  }

  EnqueuerSettings config(std::int64_t batch_size = 100) const {
    auto env =
        rr::config::Environment::from_map({{"DATABASE_URL", database().url()},
                                           {"DATABASE_PREPARED_STATEMENTS", database().prepared_statements_setting()},
                                           {"LISTEN_DATABASE_URL", database().direct_url()},
                                           {"REDIS_URL", redis_url},
                                           {"ENQUEUER_QUEUE", queue}});
    auto result = EnqueuerSettings::from_env(env);
    result.loop.batch_size = batch_size;
    return result;
  }

  // Commits `count` jobs in one statement.
  void stage(int count, const std::string& name = "send_ride_receipt", const std::string& args = "[1]") {
    rr::test::stage_jobs(database(), count, name, args);
  }
  std::set<std::string> staged_jids() { return rr::test::staged_jids(database()); }
  long staged_count() { return rr::test::staged_count(database()); }

  // Every payload in the queue, oldest first (LPUSH puts the newest at the head).
  std::vector<std::string> queued(const std::string& url) {
    Connection redis(parse_redis_url(url));
    std::vector<std::string> payloads;
    for (const auto& element : redis.command({"LRANGE", "queue:" + queue, "0", "-1"}).as_array()) {
      payloads.insert(payloads.begin(), element.as_string());
    }
    return payloads;
  }
  std::vector<std::string> queued() { return queued(redis_url); }

  rr::test::EnvChanges binary_env() const {
    return {{"DATABASE_URL", database().url()},
            {"LISTEN_DATABASE_URL", database().direct_url()},
            {"REDIS_URL", redis_url},
            {"ENQUEUER_QUEUE", queue},
            {"NOTIFY_SOCKET", std::nullopt}};
  }

  std::string queue;
  std::string redis_url;
};

std::string jid_of(const std::string& payload) {
  rapidjson::Document doc;
  doc.Parse(payload.data(), payload.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("jid") || !doc["jid"].IsString()) return "";
  return doc["jid"].GetString();
}

std::set<std::string> jids_of(const std::vector<std::string>& payloads) {
  std::set<std::string> jids;
  for (const auto& payload : payloads) jids.insert(jid_of(payload));
  return jids;
}

// Ends every other session on the test database, as a server restart would, and waits until they
// are gone so the client sockets have seen the server's goodbye.
void terminate_other_sessions() {
  const std::string others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
  database().scalar("SELECT count(pg_terminate_backend(pid)) " + others);
  for (int i = 0; i < 200 && database().scalar("SELECT count(*) " + others) != "0"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sidekiq_payload)

BOOST_AUTO_TEST_CASE(job_names_become_camel_case_worker_classes_ending_in_job) {
  using rr::jobs::sidekiq_class_name;
  BOOST_TEST(sidekiq_class_name("send_ride_receipt") == "SendRideReceiptJob");
  BOOST_TEST(sidekiq_class_name("receipt") == "ReceiptJob");
  BOOST_TEST(sidekiq_class_name("send_ride_receipt_job") == "SendRideReceiptJob");
  BOOST_TEST(sidekiq_class_name("billing/refund_charge") == "Billing::RefundChargeJob");
  BOOST_TEST(sidekiq_class_name("notify_v2__user") == "NotifyV2UserJob");
}

BOOST_AUTO_TEST_CASE(the_payload_carries_args_verbatim_and_times_as_float_seconds_by_default) {
  rr::jobs::StagedJob job{7, "send_ride_receipt", R"([12, "x\"y", {"a": [1.50, null]}])", "0123456789abcdef01234567",
                          1700000000123456};
  std::string payload =
      rr::jobs::sidekiq_payload(job, "mailers", 1700000000999000, rr::jobs::SidekiqTimestamps::seconds);
  BOOST_TEST(
      payload ==
      R"({"class":"SendRideReceiptJob","args":[12, "x\"y", {"a": [1.50, null]}],"jid":"0123456789abcdef01234567",)"
      R"("queue":"mailers","retry":true,"created_at":1700000000.123456,"enqueued_at":1700000000.999000})");
}

BOOST_AUTO_TEST_CASE(the_milliseconds_form_writes_integer_milliseconds_as_sidekiq_8_does) {
  rr::jobs::StagedJob job{7, "send_ride_receipt", "[1]", "0123456789abcdef01234567", 1700000000123456};
  std::string payload =
      rr::jobs::sidekiq_payload(job, "default", 1700000000999999, rr::jobs::SidekiqTimestamps::milliseconds);
  BOOST_TEST(payload == R"({"class":"SendRideReceiptJob","args":[1],"jid":"0123456789abcdef01234567",)"
                        R"("queue":"default","retry":true,"created_at":1700000000123,"enqueued_at":1700000000999})");
}

BOOST_AUTO_TEST_CASE(seconds_always_carry_a_decimal_point_and_six_digits_so_ruby_reads_a_float) {
  using rr::jobs::sidekiq_timestamp;
  using rr::jobs::SidekiqTimestamps;
  BOOST_TEST(sidekiq_timestamp(1700000000000000, SidekiqTimestamps::seconds) == "1700000000.000000");
  BOOST_TEST(sidekiq_timestamp(1700000000000001, SidekiqTimestamps::seconds) == "1700000000.000001");
  BOOST_TEST(sidekiq_timestamp(1700000000100000, SidekiqTimestamps::seconds) == "1700000000.100000");
  BOOST_TEST(sidekiq_timestamp(1763829000123456, SidekiqTimestamps::seconds) == "1763829000.123456");
  BOOST_TEST(sidekiq_timestamp(0, SidekiqTimestamps::seconds) == "0.000000");
  // Milliseconds round down, as Sidekiq 8's clock_gettime(CLOCK_REALTIME, :millisecond) does.
  BOOST_TEST(sidekiq_timestamp(1700000000123999, SidekiqTimestamps::milliseconds) == "1700000000123");
  BOOST_TEST(sidekiq_timestamp(1700000000000000, SidekiqTimestamps::milliseconds) == "1700000000000");
  BOOST_CHECK_THROW(sidekiq_timestamp(-1, SidekiqTimestamps::seconds), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(sidekiq_timestamps_is_read_with_seconds_as_default_and_refuses_anything_else) {
  auto read = [](std::optional<std::string> value) {
    std::map<std::string, std::string> values{{"DATABASE_URL", "postgresql://u@127.0.0.1:1/db"},
                                              {"REDIS_URL", "redis://127.0.0.1:1/0"}};
    if (value) values["SIDEKIQ_TIMESTAMPS"] = *value;
    return EnqueuerSettings::from_env(rr::config::Environment::from_map(values)).timestamps;
  };
  BOOST_TEST((read(std::nullopt) == rr::jobs::SidekiqTimestamps::seconds));
  BOOST_TEST((read("") == rr::jobs::SidekiqTimestamps::seconds));
  BOOST_TEST((read("seconds") == rr::jobs::SidekiqTimestamps::seconds));
  BOOST_TEST((read("milliseconds") == rr::jobs::SidekiqTimestamps::milliseconds));
  for (const char* bad : {"ms", "Seconds", "millis", "microseconds", "seconds "}) {
    try {
      read(bad);
      BOOST_ERROR("SIDEKIQ_TIMESTAMPS=" << bad << " was accepted");
    } catch (const rr::config::ConfigError& e) {
      BOOST_TEST(e.variable() == "SIDEKIQ_TIMESTAMPS");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(enqueuer, Fixture)

BOOST_AUTO_TEST_CASE(one_staged_job_is_pushed_to_redis_and_removed_from_the_table) {
  stage(1);
  auto jids = staged_jids();
  Enqueuer enqueuer(config());
  auto report = enqueuer.run_once();
  BOOST_TEST(report.enqueued == 1);
  BOOST_TEST(staged_count() == 0);
  auto payloads = queued();
  BOOST_REQUIRE(payloads.size() == 1u);
  BOOST_TEST(jid_of(payloads[0]) == *jids.begin());
}

BOOST_AUTO_TEST_CASE(moved_jobs_are_counted_in_the_metrics_registry_per_queue) {
  stage(3);
  Enqueuer enqueuer(config());
  enqueuer.run_once();
  std::string text = rr::metrics::default_registry().render();
  BOOST_TEST(text.find("rocket_rides_enqueuer_jobs_total{queue=\"" + queue + "\"} 3") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(an_empty_table_is_a_no_op) {
  Enqueuer enqueuer(config());
  auto report = enqueuer.run_once();
  BOOST_TEST(report.enqueued == 0);
  BOOST_TEST(queued().empty());
  Connection redis(parse_redis_url(redis_url));
  BOOST_TEST(redis.command({"SISMEMBER", "queues", queue}).as_integer() == 0);
}

BOOST_AUTO_TEST_CASE(the_pushed_payload_has_sidekiq_fields_of_the_right_types) {
  stage(1, "send_ride_receipt", R"([42, "ride", {"amount": 1500}])");
  std::string jid = *staged_jids().begin();
  auto created_at_us =
      std::stoll(database().scalar("SELECT (extract(epoch FROM created_at) * 1000000)::bigint FROM staged_jobs"));
  auto before = now_ms();
  Enqueuer enqueuer(config());
  enqueuer.run_once();
  auto after = now_ms();
  auto payloads = queued();
  BOOST_REQUIRE(payloads.size() == 1u);

  rapidjson::Document doc;
  doc.Parse(payloads[0].c_str());
  BOOST_REQUIRE(!doc.HasParseError());
  BOOST_REQUIRE(doc.IsObject());
  BOOST_TEST(doc.MemberCount() == 7u);
  BOOST_REQUIRE(doc["class"].IsString());
  BOOST_TEST(std::string(doc["class"].GetString()) == "SendRideReceiptJob");
  BOOST_REQUIRE(doc["args"].IsArray());
  BOOST_REQUIRE(doc["args"].Size() == 3u);
  BOOST_TEST(doc["args"][0].GetInt() == 42);
  BOOST_TEST(std::string(doc["args"][1].GetString()) == "ride");
  BOOST_TEST(doc["args"][2]["amount"].GetInt() == 1500);
  BOOST_REQUIRE(doc["jid"].IsString());
  BOOST_TEST(std::string(doc["jid"].GetString()) == jid);
  BOOST_TEST(std::string(doc["jid"].GetString()).size() == 24u);
  BOOST_REQUIRE(doc["queue"].IsString());
  BOOST_TEST(std::string(doc["queue"].GetString()) == queue);
  BOOST_REQUIRE(doc["retry"].IsBool());
  BOOST_TEST(doc["retry"].GetBool());
  // Float epoch seconds by default, to the microsecond PostgreSQL stamped.
  BOOST_TEST(payloads[0].find(R"("created_at":)" +
                              rr::jobs::sidekiq_timestamp(created_at_us, rr::jobs::SidekiqTimestamps::seconds) + ",") !=
                 std::string::npos,
             payloads[0]);
  BOOST_REQUIRE(doc["created_at"].IsDouble());
  BOOST_REQUIRE(doc["enqueued_at"].IsDouble());
  BOOST_TEST(doc["enqueued_at"].GetDouble() * 1000 >= static_cast<double>(before) - 1);
  BOOST_TEST(doc["enqueued_at"].GetDouble() * 1000 <= static_cast<double>(after) + 1);
  BOOST_TEST(doc["enqueued_at"].GetDouble() >= doc["created_at"].GetDouble());

  Connection redis(parse_redis_url(redis_url));
  BOOST_TEST(redis.command({"SISMEMBER", "queues", queue}).as_integer() == 1);
}

BOOST_AUTO_TEST_CASE(with_sidekiq_timestamps_milliseconds_the_pushed_times_are_integer_milliseconds) {
  stage(1);
  auto created_at_ms =
      std::stoll(database().scalar("SELECT floor(extract(epoch FROM created_at) * 1000)::bigint FROM staged_jobs"));
  auto settings = config();
  settings.timestamps = rr::jobs::SidekiqTimestamps::milliseconds;
  auto before = now_ms();
  Enqueuer enqueuer(settings);
  enqueuer.run_once();
  auto after = now_ms();
  auto payloads = queued();
  BOOST_REQUIRE(payloads.size() == 1u);
  rapidjson::Document doc;
  doc.Parse(payloads[0].c_str());
  BOOST_REQUIRE(doc.IsObject());
  BOOST_REQUIRE(doc["created_at"].IsInt64());
  BOOST_TEST(doc["created_at"].GetInt64() == created_at_ms);
  BOOST_REQUIRE(doc["enqueued_at"].IsInt64());
  BOOST_TEST(doc["enqueued_at"].GetInt64() >= before);
  BOOST_TEST(doc["enqueued_at"].GetInt64() <= after);
}

BOOST_AUTO_TEST_CASE(the_lag_from_staging_to_redis_is_measured_per_job) {
  stage(2);
  Enqueuer enqueuer(config());
  enqueuer.run_once();
  std::string text = rr::metrics::default_registry().render();
  BOOST_TEST(text.find("rocket_rides_enqueuer_lag_seconds_count{queue=\"" + queue + "\"} 2\n") != std::string::npos,
             text);
  // Staged a moment ago: well inside the alert's 30 s.
  BOOST_TEST(
      text.find("rocket_rides_enqueuer_lag_seconds_bucket{queue=\"" + queue + "\",le=\"30\"} 2\n") != std::string::npos,
      text);
}

BOOST_AUTO_TEST_CASE(jobs_are_queued_oldest_first_for_workers_popping_from_the_right) {
  for (int i = 1; i <= 3; ++i) stage(1, "job_" + std::to_string(i));
  Enqueuer enqueuer(config());
  enqueuer.run_once();
  Connection redis(parse_redis_url(redis_url));
  // Sidekiq workers BRPOP: the first staged job must come out first.
  auto first = redis.command({"RPOP", "queue:" + queue}).as_string();
  BOOST_TEST(first.find("\"Job1Job\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_staged_row_from_a_rolled_back_transaction_never_reaches_redis) {
  {
    pqxx::work txn(database().conn());
    txn.exec("INSERT INTO staged_jobs (job_name, job_args) VALUES ('rolled_back', '[]')");
    txn.abort();
  }
  stage(1, "committed");
  Enqueuer enqueuer(config());
  BOOST_TEST(enqueuer.run_once().enqueued == 1);
  BOOST_TEST(enqueuer.run_once().enqueued == 0);
  auto payloads = queued();
  BOOST_REQUIRE(payloads.size() == 1u);
  BOOST_TEST(payloads[0].find("CommittedJob") != std::string::npos);
  BOOST_TEST(payloads[0].find("RolledBackJob") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_row_whose_transaction_is_still_open_is_not_pushed_until_it_commits) {
  pqxx::connection other(database().url());
  pqxx::work pending(other);
  pending.exec("INSERT INTO staged_jobs (job_name, job_args) VALUES ('pending', '[]')");
  Enqueuer enqueuer(config());
  BOOST_TEST(enqueuer.run_once().enqueued == 0);
  BOOST_TEST(queued().empty());
  pending.commit();
  BOOST_TEST(enqueuer.run_once().enqueued == 1);
}

BOOST_AUTO_TEST_CASE(rows_locked_by_another_enqueuer_are_skipped_not_waited_for) {
  stage(3);
  pqxx::connection other(database().url());
  pqxx::work holder(other);
  auto locked = holder.exec("SELECT id FROM staged_jobs ORDER BY id LIMIT 1 FOR UPDATE");
  BOOST_REQUIRE(locked.size() == 1u);
  Enqueuer enqueuer(config());
  auto start = std::chrono::steady_clock::now();
  BOOST_TEST(enqueuer.run_once().enqueued == 2);
  BOOST_TEST((std::chrono::steady_clock::now() - start) < 5s);
  holder.abort();
  BOOST_TEST(enqueuer.run_once().enqueued == 1);
  BOOST_TEST(queued().size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_batch_moves_at_most_batch_size_jobs_and_drain_moves_them_all) {
  stage(25);
  Enqueuer enqueuer(config(10));
  BOOST_TEST(enqueuer.run_once().enqueued == 10);
  BOOST_TEST(staged_count() == 15);
  auto report = enqueuer.drain();
  BOOST_TEST(report.enqueued == 15);
  BOOST_TEST(report.passes == 2);
  BOOST_TEST(staged_count() == 0);
  BOOST_TEST(queued().size() == 25u);
}

BOOST_AUTO_TEST_CASE(with_redis_down_nothing_is_lost_and_everything_is_pushed_exactly_once_when_it_returns) {
  RedisServer server;
  auto cfg = config();
  cfg.redis.endpoint = parse_redis_url(server.url());
  Enqueuer enqueuer(cfg);
  stage(1);
  BOOST_TEST(enqueuer.run_once().enqueued == 1);  // a live connection, which the outage breaks

  server.stop();
  stage(50);
  auto staged = staged_jids();
  BOOST_CHECK_THROW(enqueuer.run_once(), rr::redis::RedisError);
  BOOST_CHECK_THROW(enqueuer.run_once(), rr::redis::RedisError);  // and again while still down
  BOOST_TEST(staged_count() == 50);
  BOOST_TEST(staged_jids() == staged);

  server.start();  // an empty Redis: the first job went with the old one
  auto report = enqueuer.drain();
  BOOST_TEST(report.enqueued == 50);
  BOOST_TEST(staged_count() == 0);
  auto payloads = queued(server.url());
  BOOST_TEST(payloads.size() == 50u);
  BOOST_TEST(jids_of(payloads) == staged);
}

BOOST_AUTO_TEST_CASE(a_failure_between_push_and_commit_pushes_the_jobs_again_with_the_same_jids) {
  stage(5);
  auto staged = staged_jids();
  Enqueuer enqueuer(config());
  enqueuer.set_before_commit_hook([] { throw std::runtime_error("crash before COMMIT"); });
  BOOST_CHECK_THROW(enqueuer.run_once(), std::runtime_error);
  BOOST_TEST(staged_jids() == staged);  // rolled back: still staged
  BOOST_TEST(queued().size() == 5u);    // but already in Redis

  enqueuer.set_before_commit_hook(nullptr);
  BOOST_TEST(enqueuer.run_once().enqueued == 5);
  BOOST_TEST(staged_count() == 0);
  auto payloads = queued();
  BOOST_TEST(payloads.size() == 10u);       // at least once: each job twice...
  BOOST_TEST(jids_of(payloads) == staged);  // ...under one jid, so a consumer can drop the repeat
}

BOOST_AUTO_TEST_CASE(a_killed_database_session_is_replaced_and_the_jobs_still_move) {
  Enqueuer enqueuer(config());
  stage(1);
  BOOST_TEST(enqueuer.run_once().enqueued == 1);
  terminate_other_sessions();
  stage(3);
  std::int64_t moved = 0;
  int failures = 0;
  for (int attempt = 0; attempt < 3 && staged_count() > 0; ++attempt) {
    try {
      moved += enqueuer.run_once().enqueued;
    } catch (const pqxx::broken_connection&) {
      ++failures;
    }
  }
  BOOST_TEST(failures <= 1);
  BOOST_TEST(moved == 3);
  BOOST_TEST(queued().size() == 4u);
}

BOOST_AUTO_TEST_CASE(the_wake_up_fires_when_a_staging_transaction_commits_and_times_out_otherwise) {
  Enqueuer enqueuer(config());
  // The first wait only opens the LISTEN connection and says "look now": rows committed before
  // it sent their NOTIFY to nobody.
  BOOST_TEST(enqueuer.wait_for_jobs(10ms));
  auto start = std::chrono::steady_clock::now();
  BOOST_TEST(!enqueuer.wait_for_jobs(200ms));
  BOOST_TEST((std::chrono::steady_clock::now() - start) >= 190ms);

  std::thread stager([&] {
    std::this_thread::sleep_for(100ms);
    stage(1);
  });
  start = std::chrono::steady_clock::now();
  bool woken = enqueuer.wait_for_jobs(10s);
  auto waited = std::chrono::steady_clock::now() - start;
  stager.join();
  BOOST_TEST(woken);
  BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() < 2000);
}

BOOST_AUTO_TEST_CASE(a_stop_request_ends_the_wait_for_jobs_at_once) {
  Enqueuer enqueuer(config());
  enqueuer.wait_for_jobs(10ms);
  rr::daemon::request_stop();
  auto start = std::chrono::steady_clock::now();
  bool woken = enqueuer.wait_for_jobs(10s);
  rr::daemon::reset_stop();
  BOOST_TEST(!woken);
  BOOST_TEST((std::chrono::steady_clock::now() - start) < 2s);
}

BOOST_AUTO_TEST_CASE(a_killed_listen_session_is_reopened_by_the_next_wait) {
  Enqueuer enqueuer(config());
  enqueuer.wait_for_jobs(10ms);
  terminate_other_sessions();
  // The server's goodbye may arrive a moment before the socket closes: at most one wait may wake
  // on it before the next one reports the lost connection.
  bool threw = false;
  for (int wait = 0; wait < 2 && !threw; ++wait) {
    try {
      enqueuer.wait_for_jobs(5s);
    } catch (const pqxx::broken_connection&) {
      threw = true;
    }
  }
  BOOST_TEST(threw);
  BOOST_TEST(enqueuer.wait_for_jobs(10ms));  // reconnected, and says "look now"
  std::thread stager([&] {
    std::this_thread::sleep_for(100ms);
    stage(1);
  });
  bool woken = enqueuer.wait_for_jobs(10s);
  stager.join();
  BOOST_TEST(woken);
}

BOOST_AUTO_TEST_CASE(two_enqueuers_racing_over_ten_thousand_jobs_push_each_exactly_once) {
  stage(10000);
  auto staged = staged_jids();
  std::int64_t moved[2] = {0, 0};
  std::string errors[2];
  auto work = [&](int which) {
    try {
      Enqueuer enqueuer(config(500));
      for (;;) {
        auto report = enqueuer.run_once();
        if (report.enqueued == 0) break;
        moved[which] += report.enqueued;
      }
    } catch (const std::exception& e) {
      errors[which] = e.what();
    }
  };
  std::thread first(work, 0);
  std::thread second(work, 1);
  first.join();
  second.join();
  BOOST_TEST(errors[0] == "");
  BOOST_TEST(errors[1] == "");
  BOOST_TEST(moved[0] + moved[1] == 10000);
  BOOST_TEST(staged_count() == 0);
  auto payloads = queued();
  BOOST_TEST(payloads.size() == 10000u);
  BOOST_TEST(jids_of(payloads) == staged);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(enqueuer_binary, Fixture)

BOOST_AUTO_TEST_CASE(once_drains_every_staged_job_and_exits_zero) {
  stage(25);
  auto env = binary_env();
  env["ENQUEUER_BATCH_SIZE"] = "10";
  auto result = rr::test::run_command({rr::test::binary("rocket-rides-enqueuer"), "--once"}, env);
  BOOST_TEST(result.exit_code == 0, result.out << result.err);
  BOOST_TEST(staged_count() == 0);
  BOOST_TEST(queued().size() == 25u);
  BOOST_TEST(result.out.find("enqueued=10") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_committed_job_reaches_redis_within_a_second_through_notify) {
  auto env = binary_env();
  env["ENQUEUER_IDLE_SLEEP"] = "60";  // the fallback poll cannot be what delivers the job
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, env);
  BOOST_REQUIRE_MESSAGE(daemon.wait_for_output("listening for staged jobs", 15s), daemon.output());
  rr::redis::ConnectOptions options;
  options.command_timeout = 5s;
  Connection redis(parse_redis_url(redis_url), options);
  for (int i = 0; i < 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    stage(1);
    auto popped = redis.command({"BRPOP", "queue:" + queue, "2"});
    auto latency = std::chrono::steady_clock::now() - start;
    BOOST_REQUIRE_MESSAGE(!popped.is_nil(), "job " << i << " not pushed within 2 s: " << daemon.output());
    BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(latency).count() < 1000);
  }
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0);
}

BOOST_AUTO_TEST_CASE(sigterm_stops_the_daemon_with_exit_status_zero_after_telling_systemd) {
  std::string socket_path = "/tmp/rr-enq-notify-" + rr::test::random_suffix() + ".sock";
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto receive = [&] {
    char buf[256];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  };

  auto env = binary_env();
  env["NOTIFY_SOCKET"] = socket_path;
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, env);
  BOOST_TEST(receive() == "READY=1");
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0, daemon.output());
  BOOST_TEST(receive() == "STOPPING=1");
  BOOST_TEST(daemon.output().find("enqueuer stopping") != std::string::npos);
  ::close(fd);
  ::unlink(socket_path.c_str());
}

BOOST_AUTO_TEST_CASE(the_daemon_rides_out_a_redis_outage_and_delivers_everything_after) {
  RedisServer server;
  server.stop();
  auto env = binary_env();
  env["REDIS_URL"] = server.url();
  env["ENQUEUER_MAX_BACKOFF"] = "0.5";
  stage(20);
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, env);
  BOOST_REQUIRE_MESSAGE(daemon.wait_for_output("enqueuer pass failed", 15s), daemon.output());
  BOOST_TEST(daemon.running());
  BOOST_TEST(staged_count() == 20);
  server.start();
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (staged_count() > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  BOOST_TEST(staged_count() == 0);
  BOOST_TEST(queued(server.url()).size() == 20u);
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0);
  BOOST_TEST(daemon.output().find("enqueuer recovered") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(metrics_port_serves_the_count_of_enqueued_jobs) {
  stage(3);
  auto port = rr::test::free_port();
  auto env = binary_env();
  env["METRICS_PORT"] = std::to_string(port);
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, env);
  BOOST_REQUIRE_MESSAGE(rr::test::wait_for_port(port, 15s), daemon.output());
  const std::string expected = "rocket_rides_enqueuer_jobs_total{queue=\"" + queue + "\"} 3";
  std::string page;
  for (int i = 0; i < 100 && page.find(expected) == std::string::npos; ++i) {
    page = rr::http::send({"GET", "http://127.0.0.1:" + std::to_string(port) + "/metrics", {}, "", 2s}).body;
    if (page.find(expected) == std::string::npos) std::this_thread::sleep_for(50ms);
  }
  BOOST_TEST(page.find(expected) != std::string::npos, page);
  BOOST_TEST(page.find("rocket_rides_loop_passes_total{loop=\"enqueuer\"}") != std::string::npos);
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0);
}

BOOST_AUTO_TEST_CASE(a_missing_redis_url_exits_two_naming_it) {
  auto env = binary_env();
  env["REDIS_URL"] = std::nullopt;
  auto result = rr::test::run_command({rr::test::binary("rocket-rides-enqueuer")}, env);
  BOOST_TEST(result.exit_code == 2);
  BOOST_TEST((result.out + result.err).find("REDIS_URL") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_malformed_redis_url_exits_two_naming_it) {
  auto env = binary_env();
  env["REDIS_URL"] = "redis://127.0.0.1:notaport/0";
  auto result = rr::test::run_command({rr::test::binary("rocket-rides-enqueuer")}, env);
  BOOST_TEST(result.exit_code == 2);
  BOOST_TEST((result.out + result.err).find("variable=REDIS_URL") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_invalid_sidekiq_timestamps_exits_two_with_one_line_naming_it) {
  auto env = binary_env();
  env["SIDEKIQ_TIMESTAMPS"] = "ms";
  auto result = rr::test::run_command({rr::test::binary("rocket-rides-enqueuer"), "--once"}, env);
  BOOST_TEST(result.exit_code == 2);
  const std::string output = result.out + result.err;
  BOOST_TEST(output.find("variable=SIDEKIQ_TIMESTAMPS") != std::string::npos, output);
  BOOST_TEST(std::count(output.begin(), output.end(), '\n') == 1, output);
}

BOOST_AUTO_TEST_CASE(an_unknown_argument_exits_two) {
  auto result = rr::test::run_command({rr::test::binary("rocket-rides-enqueuer"), "--twice"}, binary_env());
  BOOST_TEST(result.exit_code == 2);
  BOOST_TEST((result.out + result.err).find("--twice") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
