// Debian's real Sidekiq (ruby-sidekiq 6.4) works the jobs the real enqueuer pushed into a real
// Redis: every job performed exactly once by jid, the queue's latency read right from the
// payload's timestamps, and a failing job retried through Sidekiq's own retry set.
// Needs DATABASE_URL; starts its own redis-server (Sidekiq keeps global keys: retry, processes,
// stat:*) and its own Sidekiq process, both stopped by the end of each case.
#include <signal.h>

#include <rapidjson/document.h>
#include <boost/test/unit_test.hpp>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"
#include "support/polling.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/test_database.hpp"
#include "support/text.hpp"

using namespace std::chrono_literals;
using rr::test::eventually;
using rr::test::parse_json_object;

namespace {

const std::string kWorkerFile = std::string(ROCKET_RIDES_SOURCE_DIR) + "/tests/jobs/sidekiq/send_ride_receipt_job.rb";
const std::string kProbeFile = std::string(ROCKET_RIDES_SOURCE_DIR) + "/tests/jobs/sidekiq/probe.rb";
// Written by the worker class (tests/jobs/sidekiq/send_ride_receipt_job.rb).
const std::string kPerformed = "rocket_rides_test:performed";
const std::string kFailOnce = "rocket_rides_test:fail_once";

std::vector<std::string> strings_of(const rapidjson::Value& array) {
  std::vector<std::string> values;
  for (const auto& value : array.GetArray()) values.emplace_back(value.GetString());
  return values;
}

struct SidekiqFixture {
  rr::test::TestDatabase database;
  rr::test::RedisServer redis_server;
  const std::string queue = "receipts";

  rr::redis::Connection redis() const { return rr::redis::Connection(rr::redis::parse_redis_url(redis_server.url())); }

  // Staged as the ride flow stages receipts (common/rides/ride_statements.hpp); returns each
  // jid's ride id.
  std::map<std::string, std::string> stage_receipts(int count) {
    database.scalar(
        "INSERT INTO staged_jobs (job_name, job_args) SELECT 'send_ride_receipt', jsonb_build_array("
        "jsonb_build_object('amount', 1500, 'currency', 'usd', 'user_id', 1, 'ride_id', g)) "
        "FROM generate_series(1, " +
        std::to_string(count) + ") AS g");
    pqxx::work txn(database.conn());
    std::map<std::string, std::string> rides;
    for (const auto& row : txn.exec("SELECT staged_jobs_jid(id, jid), job_args->0->>'ride_id' FROM staged_jobs")) {
      rides[row[0].as<std::string>()] = row[1].as<std::string>();
    }
    return rides;
  }

  // The real enqueuer drains staged_jobs into queue:receipts once.
  void enqueue(std::optional<std::string> timestamps) {
    auto result = rr::test::run_command({rr::test::binary("rocket-rides-enqueuer"), "--once"},
                                        {{"DATABASE_URL", database.url()},
                                         {"DATABASE_PREPARED_STATEMENTS", database.prepared_statements_setting()},
                                         {"LISTEN_DATABASE_URL", database.direct_url()},
                                         {"REDIS_URL", redis_server.url()},
                                         {"ENQUEUER_QUEUE", queue},
                                         {"SIDEKIQ_TIMESTAMPS", timestamps},
                                         {"METRICS_PORT", std::nullopt},
                                         {"NOTIFY_SOCKET", std::nullopt}});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "enqueuer: " << result.out << result.err);
    BOOST_REQUIRE(database.scalar("SELECT count(*) FROM staged_jobs") == "0");
  }

  // What Sidekiq's own API reads (tests/jobs/sidekiq/probe.rb).
  rapidjson::Document probe(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/ruby", kProbeFile};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = rr::test::run_command(argv, {{"REDIS_URL", redis_server.url()}});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "probe.rb failed: " << result.out << result.err);
    return parse_json_object(result.out);
  }

  // A Sidekiq process working queue:receipts with five threads; -t 5: five seconds to finish
  // jobs in hand after SIGTERM.
  rr::test::ChildProcess start_sidekiq() {
    return rr::test::ChildProcess(
        {"/usr/bin/sidekiq", "-r", kWorkerFile, "-q", queue, "-c", "5", "-t", "5", "-e", "test"},
        {{"REDIS_URL", redis_server.url()}});
  }

  long long performed_count() { return redis().command({"LLEN", kPerformed}).as_integer(); }
  long long retry_set_size() { return redis().command({"ZCARD", "retry"}).as_integer(); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(sidekiq_compat, SidekiqFixture)

BOOST_AUTO_TEST_CASE(sidekiq_performs_every_enqueued_job_once_reads_its_latency_and_retries_a_failure) {
  const auto rides = stage_receipts(50);
  BOOST_REQUIRE(rides.size() == 50u);
  const std::string failing_jid = rides.begin()->first;
  redis().command({"SET", kFailOnce, failing_jid});

  enqueue(std::nullopt);  // the default form: float epoch seconds

  // Before any worker runs: the queue as Sidekiq (and its Web UI) reads it.
  auto queue_state = probe({"queue", queue});
  BOOST_TEST(queue_state["size"].GetInt() == 50);
  const double latency = queue_state["latency"].GetDouble();
  BOOST_TEST(latency >= 0.0);
  BOOST_TEST(latency <= 60.0);
  BOOST_TEST(queue_state["created_at_age_min"].GetDouble() >= -1.0);  // PostgreSQL's clock, this machine
  BOOST_TEST(queue_state["created_at_age_max"].GetDouble() <= 60.0);
  BOOST_TEST(strings_of(queue_state["created_at_types"]) == std::vector<std::string>{"Float"});
  BOOST_TEST(strings_of(queue_state["enqueued_at_types"]) == std::vector<std::string>{"Float"});

  auto sidekiq = start_sidekiq();
  // 49 jobs done, the 50th failed once and waits in the retry set.
  BOOST_REQUIRE_MESSAGE(eventually([&] { return performed_count() == 49 && retry_set_size() == 1; }, 30s, 100ms),
                        "performed " << performed_count() << ", retry set " << retry_set_size() << "\n"
                                     << sidekiq.output());
  auto retries = probe({"retries"});
  BOOST_TEST(strings_of(retries["jids"]) == std::vector<std::string>{failing_jid});
  // After the failure Sidekiq's own fields (failed_at, ...) sit beside ours: all float seconds,
  // never milliseconds and seconds side by side.
  BOOST_TEST(strings_of(retries["time_types"]) == std::vector<std::string>{"Float"});
  BOOST_TEST(retries["retry_count"].GetInt() == 0);

  // Sidekiq 6 schedules the first retry 15 to 24 s out (count**4 + 15 + jitter) and polls the
  // retry set every few seconds more; rather than wait, the test does what an operator does in
  // the Web UI: Sidekiq::RetrySet#retry_all (probe.rb retry-all) puts it back on its queue now.
  BOOST_TEST(probe({"retry-all"})["retried"].GetInt() == 1);
  BOOST_REQUIRE_MESSAGE(eventually([&] { return performed_count() == 50; }, 20s, 100ms),
                        "performed " << performed_count() << "\n"
                                     << sidekiq.output());

  // Every jid exactly once, each with its own ride's arguments.
  std::map<std::string, int> times_performed;
  for (const auto& entry : redis().command({"LRANGE", kPerformed, "0", "-1"}).as_array()) {
    const std::string& text = entry.as_string();
    const auto space = text.find(' ');
    const std::string jid = text.substr(0, space);
    ++times_performed[jid];
    BOOST_TEST(rides.count(jid) == 1u, jid);
    if (rides.count(jid)) BOOST_TEST(text.substr(space + 1) == rides.at(jid));
  }
  BOOST_TEST(times_performed.size() == 50u);
  for (const auto& [jid, times] : times_performed) BOOST_TEST(times == 1, jid);
  BOOST_TEST(redis().command({"EXISTS", "rocket_rides_test:failed:" + failing_jid}).as_integer() == 1);
  BOOST_TEST(redis().command({"LLEN", "queue:" + queue}).as_integer() == 0);
  BOOST_TEST(retry_set_size() == 0);
  BOOST_TEST(redis().command({"ZCARD", "dead"}).as_integer() == 0);

  sidekiq.signal(SIGTERM);
  auto status = sidekiq.wait(15s);
  BOOST_TEST(status.has_value());
  if (status) BOOST_TEST(*status == 0, sidekiq.output());
}

BOOST_AUTO_TEST_CASE(the_milliseconds_form_is_sidekiq_8s_integer_which_older_sidekiq_misreads) {
  stage_receipts(3);
  const auto before_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  enqueue("milliseconds");

  // Sidekiq 8 writes and reads integer epoch milliseconds (clock_gettime(:millisecond)).
  for (const auto& entry : redis().command({"LRANGE", "queue:" + queue, "0", "-1"}).as_array()) {
    auto payload = parse_json_object(entry.as_string());
    for (const char* field : {"created_at", "enqueued_at"}) {
      BOOST_REQUIRE_MESSAGE(payload[field].IsInt64() && !payload[field].IsDouble(), field << ": " << entry.as_string());
      BOOST_TEST(payload[field].GetInt64() > before_ms - 60'000, field);
      BOOST_TEST(payload[field].GetInt64() < before_ms + 60'000, field);
    }
  }
  // Sidekiq 6 and 7 read them as seconds (which is why seconds are the default): a latency of
  // minus tens of thousands of years.
  auto queue_state = probe({"queue", queue});
  BOOST_TEST(strings_of(queue_state["enqueued_at_types"]) == std::vector<std::string>{"Integer"});
  BOOST_TEST(queue_state["latency"].GetDouble() < -1e12);
}

BOOST_AUTO_TEST_SUITE_END()
