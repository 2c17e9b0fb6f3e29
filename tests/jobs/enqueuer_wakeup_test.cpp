// The enqueuer's wake-up without a trigger: no NOTIFY from a staging commit, the
// debounced NOTIFYs of EnqueuerWakeup (leading edge, at most one per interval, trailing edge), and
// end to end the real API, the real enqueuer and Redis: rides reach Redis within the 100 ms target,
// a burst of commits sends few NOTIFYs, and a broken wake-up connection costs one log line, no 201.
// Needs DATABASE_URL and REDIS_URL.
#include <rapidjson/document.h>

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"
#include "support/api_process.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/staged_jobs.hpp"
#include "support/test_database.hpp"
#include "support/text.hpp"

using namespace std::chrono_literals;
using rr::jobs::EnqueuerWakeup;
using Clock = std::chrono::steady_clock;
using rr::test::count_of;
using rr::test::metric_sample;

namespace {

double milliseconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

EnqueuerWakeup::Options wakeup_options(const rr::test::TestDatabase& db, std::chrono::milliseconds debounce) {
  EnqueuerWakeup::Options options;
  options.database_url = db.url();  // through PgBouncer in the *_pgbouncer run
  options.debounce = debounce;
  return options;
}

struct WakeupFixture {
  rr::test::TestDatabase db;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(enqueuer_wakeup_settings)

BOOST_AUTO_TEST_CASE(the_debounce_is_20_ms_by_default_0_turns_it_off_and_over_a_second_is_refused) {
  using rr::config::Environment;
  using rr::jobs::EnqueuerWakeupSettings;
  auto unset = EnqueuerWakeupSettings::from_env(Environment::from_map({}));
  BOOST_TEST(unset.debounce.count() == 20);
  BOOST_TEST(unset.enabled());
  auto off = EnqueuerWakeupSettings::from_env(Environment::from_map({{"ENQUEUER_WAKEUP_DEBOUNCE", "0"}}));
  BOOST_TEST(!off.enabled());
  BOOST_TEST(!rr::jobs::make_enqueuer_wakeup(off, "postgresql://unused"));
  BOOST_TEST(EnqueuerWakeupSettings::from_env(Environment::from_map({{"ENQUEUER_WAKEUP_DEBOUNCE", "0.05"}}))
                 .debounce.count() == 50);
  for (const char* bad : {"2", "-0.01", "soon"}) {
    try {
      EnqueuerWakeupSettings::from_env(Environment::from_map({{"ENQUEUER_WAKEUP_DEBOUNCE", bad}}));
      BOOST_ERROR("accepted " << bad);
    } catch (const rr::config::ConfigError& e) {
      BOOST_TEST(e.variable() == "ENQUEUER_WAKEUP_DEBOUNCE");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(enqueuer_wakeup, WakeupFixture)

BOOST_AUTO_TEST_CASE(a_staging_commit_sends_no_notify_since_migration_7) {
  rr::test::StagedJobsEar ear(db.direct_url());
  {
    pqxx::work tx(db.conn());
    tx.exec("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', '[1]')");
    tx.commit();
  }
  BOOST_TEST(ear.wait_for(1, 300ms) == 0);
  BOOST_TEST(db.scalar("SELECT count(*) FROM pg_trigger WHERE tgname = 'staged_jobs_notify'") == "0");
  BOOST_TEST(db.scalar("SELECT count(*) FROM pg_proc WHERE proname = 'staged_jobs_notify'") == "0");
}

BOOST_AUTO_TEST_CASE(the_first_staging_after_a_quiet_period_is_notified_at_once) {
  rr::test::StagedJobsEar ear(db.direct_url());
  // An interval far longer than the wait below: only the leading edge can be what is heard. (How
  // soon is the end-to-end case's and the bench's to say: one sample on a busy machine is noise.)
  EnqueuerWakeup wakeup(wakeup_options(db, 5s));
  std::this_thread::sleep_for(200ms);  // connected, and quiet
  BOOST_TEST(ear.heard() == 0);        // nothing is sent while nothing is staged
  auto staged_at = Clock::now();
  wakeup.jobs_staged();
  BOOST_REQUIRE(ear.wait_for(1, 2s) == 1);
  BOOST_TEST_MESSAGE("heard " << milliseconds_between(staged_at, ear.last_heard_at()) << " ms after the staging");
  // Counted once its statement returned, which may be just after the listener heard it.
  for (int i = 0; i < 100 && wakeup.notifies_sent() == 0; ++i) std::this_thread::sleep_for(10ms);
  BOOST_TEST(wakeup.notifies_sent() == 1u);
}

BOOST_AUTO_TEST_CASE(a_burst_of_stagings_sends_at_most_one_notify_per_interval) {
  rr::test::StagedJobsEar ear(db.direct_url());
  EnqueuerWakeup wakeup(wakeup_options(db, rr::jobs::kDefaultWakeupDebounce));
  std::this_thread::sleep_for(100ms);
  constexpr int kThreads = 4, kPerThread = 500;
  std::atomic<long> slowest_call_us{0};
  auto started = Clock::now();
  std::vector<std::thread> stagers;
  for (int t = 0; t < kThreads; ++t) {
    stagers.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        auto before = Clock::now();
        wakeup.jobs_staged();
        long took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - before).count();
        long seen = slowest_call_us.load();
        while (took > seen && !slowest_call_us.compare_exchange_weak(seen, took)) {
        }
        std::this_thread::sleep_for(1ms);
      }
    });
  }
  for (auto& stager : stagers) stager.join();
  double burst_ms = milliseconds_between(started, Clock::now());
  std::this_thread::sleep_for(100ms);  // the trailing NOTIFY
  auto sent = wakeup.notifies_sent();
  BOOST_TEST_MESSAGE(kThreads * kPerThread << " stagings over " << burst_ms << " ms: " << sent
                                           << " NOTIFYs, slowest call " << slowest_call_us.load() << " us");
  BOOST_TEST(sent >= 2u);  // the leading one and at least the trailing one
  // One per 20 ms interval at most, plus the leading one and the trailing one.
  BOOST_TEST(sent <= static_cast<std::uint64_t>(burst_ms / 20) + 2);
  BOOST_TEST(sent < static_cast<std::uint64_t>(kThreads * kPerThread / 10));
  BOOST_TEST(ear.wait_for(static_cast<int>(sent), 2s) == static_cast<int>(sent));
  // No I/O on the caller: a flag and at most a futex wake (generous for a sanitizer build on a busy machine).
  BOOST_TEST(slowest_call_us.load() < 20000);
}

BOOST_AUTO_TEST_CASE(a_staging_just_after_a_notify_gets_the_trailing_one_within_the_interval) {
  rr::test::StagedJobsEar ear(db.direct_url());
  // Long enough to tell "debounced" from "sent at once" on a busy machine.
  constexpr auto kInterval = 300ms;
  EnqueuerWakeup wakeup(wakeup_options(db, kInterval));
  std::this_thread::sleep_for(100ms);
  wakeup.jobs_staged();
  BOOST_REQUIRE(ear.wait_for(1, 2s) == 1);
  auto first = ear.last_heard_at();
  auto staged_again = Clock::now();
  wakeup.jobs_staged();  // within the interval the first NOTIFY opened
  wakeup.jobs_staged();  // shares the same trailing NOTIFY
  BOOST_REQUIRE(ear.wait_for(2, 2s) == 2);
  auto second = ear.last_heard_at();
  BOOST_TEST(milliseconds_between(first, second) >= 200);              // debounced, not sent at once
  BOOST_TEST(milliseconds_between(staged_again, second) < 300 + 200);  // at the interval's end
  BOOST_TEST(ear.wait_for(3, 700ms) == 2);                             // and nothing more while quiet
  BOOST_TEST(wakeup.notifies_sent() == 2u);
}

BOOST_AUTO_TEST_CASE(a_wakeup_that_cannot_connect_never_blocks_its_callers) {
  auto options = wakeup_options(db, rr::jobs::kDefaultWakeupDebounce);
  options.database_url = "postgresql://postgres@127.0.0.1:" + std::to_string(rr::test::free_port()) + "/nothing";
  EnqueuerWakeup wakeup(options);
  auto started = Clock::now();
  for (int i = 0; i < 1000; ++i) wakeup.jobs_staged();
  BOOST_TEST(milliseconds_between(started, Clock::now()) < 100);
  std::this_thread::sleep_for(300ms);
  BOOST_TEST(wakeup.notifies_sent() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// The real API and the real enqueuer over one test database, and a Redis queue of this test's own.
// The enqueuer's fallback poll is a minute, so only a wake-up can deliver within the waits below.
struct EndToEndFixture : rr::test::ApiFixture {
  EndToEndFixture() : queue("wakeup-" + rr::test::random_suffix(8)), redis_url(rr::test::require_env("REDIS_URL")) {
    metrics_port = rr::test::free_port();
    enqueuer = std::make_unique<rr::test::ChildProcess>(
        std::vector<std::string>{rr::test::binary("rocket-rides-enqueuer")},
        rr::test::EnvChanges{{"DATABASE_URL", db.url()},
                             {"DATABASE_PREPARED_STATEMENTS", db.prepared_statements_setting()},
                             {"LISTEN_DATABASE_URL", db.direct_url()},
                             {"REDIS_URL", redis_url},
                             {"ENQUEUER_QUEUE", queue},
                             {"ENQUEUER_IDLE_SLEEP", "60"},
                             {"NOTIFY_SOCKET", std::nullopt}});
    BOOST_REQUIRE_MESSAGE(enqueuer->wait_for_output("listening for staged jobs", 15s), enqueuer->output());
  }
  ~EndToEndFixture() {
    enqueuer->signal(SIGTERM);
    enqueuer->wait(15s);
    try {
      redis().pipeline({{"DEL", "queue:" + queue}, {"SREM", "queues", queue}});
    } catch (const std::exception&) {
    }
  }

  void start(rr::test::EnvChanges extra = {}) {
    extra["METRICS_PORT"] = std::to_string(metrics_port);
    start_api(extra);
    BOOST_REQUIRE(rr::test::wait_for_port(metrics_port, 15s));
  }

  rr::redis::Connection redis() const {
    rr::redis::ConnectOptions options;
    options.command_timeout = 5s;
    return rr::redis::Connection(rr::redis::parse_redis_url(redis_url), options);
  }
  long queued() { return static_cast<long>(redis().command({"LLEN", "queue:" + queue}).as_integer()); }
  bool wait_for_queued(long count, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (queued() < count && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
    return queued() >= count;
  }
  double notifies_sent() {
    auto page = rr::http::send({"GET", "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics", {}, "", 5s});
    return metric_sample(page.body, "rocket_rides_enqueuer_wakeup_notifies_total");
  }

  std::string queue;
  std::string redis_url;
  std::uint16_t metrics_port = 0;
  std::unique_ptr<rr::test::ChildProcess> enqueuer;
};

// Milliseconds from the staging transaction's start (created_at) to the push (enqueued_at), both
// written by this machine's clock: an upper bound of commit to push.
double staging_to_push_ms(const std::string& payload) {
  rapidjson::Document doc;
  doc.Parse(payload.data(), payload.size());
  BOOST_REQUIRE(doc.IsObject() && doc.HasMember("created_at") && doc.HasMember("enqueued_at"));
  return (doc["enqueued_at"].GetDouble() - doc["created_at"].GetDouble()) * 1000.0;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(enqueuer_wakeup_end_to_end, EndToEndFixture)

BOOST_AUTO_TEST_CASE(rides_staged_by_the_api_reach_redis_within_the_100_ms_target) {
  start();
  auto redis_connection = redis();
  std::vector<double> latencies;
  for (int i = 0; i < 20; ++i) {
    auto response = api->post_ride(token, rr::test::new_key());
    BOOST_REQUIRE_MESSAGE(response.status == 201, response.body);
    auto popped = redis_connection.command({"BRPOP", "queue:" + queue, "2"});
    BOOST_REQUIRE_MESSAGE(!popped.is_nil(), "ride " << i << "'s receipt not pushed within 2 s\n" << enqueuer->output());
    latencies.push_back(staging_to_push_ms(popped.as_array().at(1).as_string()));
    std::this_thread::sleep_for(30ms);  // quiet between rides: each one is a leading edge
  }
  std::sort(latencies.begin(), latencies.end());
  BOOST_TEST_MESSAGE("staging to push, ms: p50 " << latencies[10] << ", p95 " << latencies[18] << ", max "
                                                 << latencies.back());
  BOOST_TEST(latencies[18] < 100);  // the 19th of 20
  BOOST_TEST(latencies.back() < 1000);
}

BOOST_AUTO_TEST_CASE(a_burst_of_rides_sends_far_fewer_notifies_than_commits_and_delivers_every_job) {
  // One user's sixteen clients at once. An interval of 100 ms keeps "far fewer" true however slow
  // this machine runs the sanitizer build (the default's own bound is the in-process burst's).
  start({{"API_MAX_IN_FLIGHT_PER_USER", "64"}, {"ENQUEUER_WAKEUP_DEBOUNCE", "0.1"}});
  double before = notifies_sent();
  BOOST_REQUIRE(before >= 0);
  constexpr int kClients = 16, kRidesEach = 15;
  std::atomic<int> created{0};
  auto started = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < kRidesEach; ++i) {
        if (api->post_ride(token, rr::test::new_key()).status == 201) ++created;
      }
    });
  }
  for (auto& client : clients) client.join();
  double burst_ms = milliseconds_between(started, Clock::now());
  BOOST_REQUIRE(created.load() == kClients * kRidesEach);
  // Every receipt, the last ones included (the trailing NOTIFY), with the poll a minute away.
  BOOST_TEST(wait_for_queued(created.load(), 2s), queued() << " of " << created.load() << " pushed");
  double sent = notifies_sent() - before;
  BOOST_TEST_MESSAGE(created.load() << " staging commits in " << burst_ms << " ms: " << sent << " NOTIFYs");
  BOOST_TEST(sent >= 1);
  BOOST_TEST(sent <= burst_ms / 100 + 2);  // one per interval, plus the leading and the trailing one
  BOOST_TEST(sent < created.load() / 4.0);
}

BOOST_AUTO_TEST_CASE(a_broken_wakeup_connection_logs_one_line_and_the_api_keeps_answering_201) {
  if (db.statement_mode() == rr::db::StatementMode::unnamed) {
    // Behind PgBouncer the wake-up's session is PgBouncer's to replace; the direct run covers this.
    BOOST_TEST_MESSAGE("skipped through PgBouncer");
    return;
  }
  // One request connection, opened by the warm-up ride below and kept: only the wake-up needs a new
  // session while the database refuses them.
  start({{"DATABASE_POOL_SIZE", "1"}});
  BOOST_REQUIRE(api->post_ride(token, rr::test::new_key()).status == 201);
  BOOST_REQUIRE(wait_for_queued(1, 2s));

  pqxx::connection admin(rr::test::with_database(rr::test::require_env("DATABASE_URL"), "postgres"));
  pqxx::nontransaction tx(admin);
  tx.exec("ALTER DATABASE " + db.name() + " ALLOW_CONNECTIONS false");
  // The wake-up's session is the one whose last statement was its NOTIFY.
  auto ended = tx.exec_params(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
      "WHERE datname = $1 AND query LIKE '%pg_notify(''staged_jobs''%'",
      db.name());
  BOOST_REQUIRE(ended[0][0].as<int>() == 1);

  for (int i = 0; i < 10; ++i) {
    auto response = api->post_ride(token, rr::test::new_key());
    BOOST_TEST(response.status == 201, response.body);
    std::this_thread::sleep_for(100ms);  // several reconnect attempts and backoffs meanwhile
  }
  BOOST_TEST(api->running());
  BOOST_TEST(count_of(api->output(), "enqueuer wake-up failed") == 1u, api->output());
  BOOST_TEST(queued() == 1);  // nothing woke the enqueuer

  tx.exec("ALTER DATABASE " + db.name() + " ALLOW_CONNECTIONS true");
  // The wake-up reconnects within its backoff (at most 5 s) and sends the NOTIFY it owes.
  BOOST_TEST(wait_for_queued(11, 10s), queued() << " pushed\n" << api->output());
  BOOST_TEST(api->wait_for_output("enqueuer wake-up works again", 1s), api->output());
  BOOST_TEST(count_of(api->output(), "enqueuer wake-up failed") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
