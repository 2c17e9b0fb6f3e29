// The enqueuer binary through Redis Sentinel failovers, all real processes (redis-server,
// redis-sentinel, PostgreSQL): kill -9 of the master during a large drain with
// REDIS_MIN_REPLICAS=1 loses no jid and the enqueuer follows the promoted replica within seconds;
// the old master comes back as a replica; a sentinel down; every sentinel down (one line per
// failed pass naming each, backoff, recovery). Needs DATABASE_URL.
#include <rapidjson/document.h>
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/redis/connection.hpp"
#include "support/polling.hpp"
#include "support/process.hpp"
#include "support/sentinel_group.hpp"
#include "support/staged_jobs.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::test::RedisServer;
using rr::test::SentinelGroup;
using steady = std::chrono::steady_clock;
using rr::test::eventually;

namespace {

rr::test::TestDatabase& database() {
  static rr::test::TestDatabase db;
  return db;
}

void stage(int count) { rr::test::stage_jobs(database(), count); }
std::set<std::string> staged_jids() { return rr::test::staged_jids(database()); }
long staged_count() { return rr::test::staged_count(database()); }

rr::redis::Connection connect(std::uint16_t port) {
  return rr::redis::Connection(rr::redis::parse_redis_url("redis://127.0.0.1:" + std::to_string(port) + "/0"));
}

// Every jid in queue:default of the server on `port`, with repeats.
std::multiset<std::string> queued_jids(std::uint16_t port) {
  auto redis = connect(port);
  std::multiset<std::string> jids;
  for (const auto& element : redis.command({"LRANGE", "queue:default", "0", "-1"}).as_array()) {
    rapidjson::Document doc;
    doc.Parse(element.as_string().c_str());
    if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("jid")) jids.insert(doc["jid"].GetString());
  }
  return jids;
}

long long queue_length(std::uint16_t port) {
  try {
    return connect(port).command({"LLEN", "queue:default"}).as_integer();
  } catch (const rr::redis::RedisError&) {
    return -1;
  }
}

std::string role_of(std::uint16_t port) {
  try {
    auto reply = connect(port).command({"ROLE"});
    return reply.as_array().front().as_string();
  } catch (const rr::redis::RedisError&) {
    return "";
  }
}

struct Fixture {
  Fixture() { database().truncate_all(); }

  rr::test::EnvChanges env(const SentinelGroup& group) const {
    return {{"DATABASE_URL", database().url()},
            {"DATABASE_PREPARED_STATEMENTS", database().prepared_statements_setting()},
            {"LISTEN_DATABASE_URL", database().direct_url()},
            {"REDIS_URL", std::nullopt},
            {"REDIS_SENTINELS", group.sentinel_list()},
            {"REDIS_SENTINEL_MASTER", group.master_name()},
            {"REDIS_MIN_REPLICAS", "1"},
            {"ENQUEUER_MAX_BACKOFF", "1"},
            {"NOTIFY_SOCKET", std::nullopt}};
  }
};

// Lines of `output` holding `needle`.
std::vector<std::string> lines_with(const std::string& output, const std::string& needle) {
  std::vector<std::string> found;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(needle) != std::string::npos) found.push_back(line);
  }
  return found;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(enqueuer_failover, Fixture)

BOOST_AUTO_TEST_CASE(kill_9_of_the_master_during_a_drain_loses_no_jid_and_the_enqueuer_follows_the_promotion) {
  SentinelGroup group(2);  // two replicas: after the failover one is left to acknowledge
  BOOST_REQUIRE(group.wait_until_watched(2, 30s));
  const std::uint16_t old_master = group.first_master().port();
  stage(30000);
  const auto staged = staged_jids();

  auto environment = env(group);
  environment["ENQUEUER_BATCH_SIZE"] = "100";
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, environment);
  BOOST_REQUIRE_MESSAGE(eventually([&] { return queue_length(old_master) >= 3000; }, 30s, 5ms), daemon.output());
  group.first_master().kill();
  const auto killed = steady::now();
  BOOST_TEST_MESSAGE("killed the master with " << staged_count() << " jobs still staged");
  BOOST_REQUIRE(staged_count() > 0);  // the drain was still going

  std::uint16_t new_master = 0;
  BOOST_REQUIRE(eventually(
      [&] {
        new_master = group.named_master_port();
        return new_master != 0 && new_master != old_master;
      },
      30s, 50ms));
  BOOST_REQUIRE(group.wait_for_master(new_master, 30s));
  const auto promoted = steady::now();
  const std::string followed = "msg=\"connected to the Redis master\" master=127.0.0.1:" + std::to_string(new_master);
  BOOST_REQUIRE_MESSAGE(daemon.wait_for_output(followed, 15s), daemon.output());
  const auto following = steady::now();
  BOOST_TEST_MESSAGE("promotion " << std::chrono::duration<double>(promoted - killed).count() << " s after the kill, "
                                  << "enqueuer on the new master "
                                  << std::chrono::duration<double>(following - promoted).count() << " s after that");
  BOOST_TEST((following - promoted < 5s));

  BOOST_REQUIRE_MESSAGE(eventually([] { return staged_count() == 0; }, 60s, 50ms), daemon.output().substr(0, 20000));
  const auto delivered = queued_jids(new_master);
  const std::set<std::string> distinct(delivered.begin(), delivered.end());
  std::size_t lost = 0;
  for (const auto& jid : staged) lost += distinct.count(jid) == 0 ? 1 : 0;
  BOOST_TEST_MESSAGE(staged.size() << " staged, " << distinct.size() << " distinct on the new master, "
                                   << delivered.size() - distinct.size() << " duplicates, " << lost << " lost");
  BOOST_TEST(lost == 0u);
  BOOST_TEST(distinct.size() == staged.size());

  // The old master returns (empty: it had no persistence) and the sentinels make it a replica.
  group.first_master().start();
  BOOST_TEST(eventually([&] { return role_of(old_master) == "slave"; }, 30s, 100ms));
  stage(100);
  const auto later = staged_jids();
  BOOST_REQUIRE(eventually([] { return staged_count() == 0; }, 20s, 50ms));
  const auto after = queued_jids(new_master);
  for (const auto& jid : later) BOOST_TEST(after.count(jid) >= 1u);
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0);
}

BOOST_AUTO_TEST_CASE(with_one_sentinel_down_jobs_flow_and_the_other_two_still_fail_over) {
  SentinelGroup group(2);
  BOOST_REQUIRE(group.wait_until_watched(2, 30s));
  group.sentinel(0).stop();  // the first listed, so every discovery meets it
  const std::uint16_t old_master = group.first_master().port();
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, env(group));
  stage(100);
  auto first = staged_jids();
  BOOST_REQUIRE_MESSAGE(eventually([] { return staged_count() == 0; }, 20s, 50ms), daemon.output());
  BOOST_TEST(queued_jids(old_master).size() == first.size());

  group.first_master().kill();
  std::uint16_t new_master = 0;
  BOOST_REQUIRE(eventually(
      [&] {
        new_master = group.named_master_port();
        return new_master != 0 && new_master != old_master;
      },
      30s, 50ms));
  stage(100);
  auto second = staged_jids();
  BOOST_REQUIRE_MESSAGE(eventually([] { return staged_count() == 0; }, 30s, 50ms), daemon.output());
  const auto delivered = queued_jids(new_master);
  for (const auto& jid : first) BOOST_TEST(delivered.count(jid) >= 1u);
  for (const auto& jid : second) BOOST_TEST(delivered.count(jid) >= 1u);
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0);
}

BOOST_AUTO_TEST_CASE(with_every_sentinel_down_each_failed_pass_is_one_line_naming_them_and_it_recovers) {
  SentinelGroup group(1);
  BOOST_REQUIRE(group.wait_until_watched(1, 30s));
  const std::uint16_t master = group.first_master().port();
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, env(group));
  stage(10);
  BOOST_REQUIRE_MESSAGE(eventually([] { return staged_count() == 0; }, 20s, 50ms), daemon.output());

  for (std::size_t i = 0; i < group.sentinel_count(); ++i) group.sentinel(i).stop();
  const auto sentinels_down_at = std::chrono::steady_clock::now();
  // A connection that still works is kept; end it, so the enqueuer must ask the sentinels.
  group.first_master().cli({"CLIENT", "KILL", "TYPE", "normal"});
  stage(20);
  const auto staged = staged_jids();
  BOOST_REQUIRE_MESSAGE(daemon.wait_for_output("no sentinel named a master", 15s), daemon.output());
  std::this_thread::sleep_for(3s);
  BOOST_TEST(staged_jids() == staged);
  const auto failures = lines_with(daemon.output(), "enqueuer pass failed");
  // Backoff, not a spin: full jitter (each sleep uniform up to 100 ms doubling to
  // ENQUEUER_MAX_BACKOFF=1 s) makes about four failed passes while it ramps up and two a second
  // after that; a spin makes thousands. Bounded by the time that really passed (a loaded machine
  // stretches it), with room for the jitter: 8 + 4 a second is 4 standard deviations above the mean.
  const double down_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sentinels_down_at).count();
  BOOST_TEST(failures.size() >= 2u);
  BOOST_TEST(failures.size() <= 8 + static_cast<std::size_t>(4 * down_seconds),
             failures.size() << " failed passes in " << down_seconds << " s");
  for (const auto& line : failures) {
    if (line.find("no sentinel named a master") == std::string::npos) continue;
    for (std::size_t i = 0; i < group.sentinel_count(); ++i) {
      BOOST_TEST(line.find(group.sentinel(i).address()) != std::string::npos, line);
    }
    BOOST_TEST(line.find("retry_in=") != std::string::npos, line);
  }

  for (std::size_t i = 0; i < group.sentinel_count(); ++i) group.sentinel(i).start();
  BOOST_REQUIRE_MESSAGE(eventually([] { return staged_count() == 0; }, 20s, 50ms), daemon.output());
  const auto delivered = queued_jids(master);
  for (const auto& jid : staged) BOOST_TEST(delivered.count(jid) >= 1u);
  BOOST_TEST(daemon.wait_for_output("enqueuer recovered", 5s));
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
