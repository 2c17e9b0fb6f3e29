// REDIS_MIN_REPLICAS against a real master and replica: a batch no replica acknowledges stays
// staged (one log line and a metric say why), the master is not sent it again while it has no
// replica, and once one is back the same jids are delivered. Needs DATABASE_URL; starts its own
// redis-server processes.
#include <rapidjson/document.h>
#include <signal.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/jobs/enqueuer.hpp"
#include "common/metrics/registry.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/staged_jobs.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::jobs::Enqueuer;
using rr::jobs::EnqueuerSettings;
using rr::jobs::ReplicasShort;
using rr::test::RedisServer;

namespace {

rr::test::TestDatabase& database() {
  static rr::test::TestDatabase db;
  return db;
}

struct Fixture {
  Fixture() : queue("replicas-" + rr::test::random_suffix(8)) { database().truncate_all(); }

  rr::test::EnvChanges binary_env() const {
    return {{"DATABASE_URL", database().url()},
            {"DATABASE_PREPARED_STATEMENTS", database().prepared_statements_setting()},
            {"LISTEN_DATABASE_URL", database().direct_url()},
            {"REDIS_URL", master.url()},
            {"REDIS_MIN_REPLICAS", "1"},
            {"ENQUEUER_QUEUE", queue},
            {"NOTIFY_SOCKET", std::nullopt}};
  }

  // `replica_wait`: what WAIT waits for a replica; short where none is there, so the refusals are
  // quick. Where one is, WAIT returns on its acknowledgement and the bound only has to be above
  // what a loaded machine takes (300 ms was not, under the sanitizers with the suite running).
  EnqueuerSettings config(std::chrono::milliseconds replica_wait = 300ms) const {
    std::map<std::string, std::string> values;
    for (const auto& [name, value] : binary_env()) {
      if (value) values[name] = *value;
    }
    auto result = EnqueuerSettings::from_env(rr::config::Environment::from_map(values));
    result.replicas.timeout = replica_wait;
    return result;
  }

  void stage(int count) { rr::test::stage_jobs(database(), count); }
  std::set<std::string> staged_jids() { return rr::test::staged_jids(database()); }

  // Every jid in the queue of `server`, with repeats.
  std::multiset<std::string> queued_jids(const RedisServer& server) const {
    std::multiset<std::string> jids;
    std::istringstream lines(server.cli({"LRANGE", "queue:" + queue, "0", "-1"}));
    std::string payload;
    while (std::getline(lines, payload)) {
      rapidjson::Document doc;
      doc.Parse(payload.c_str());
      if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("jid")) jids.insert(doc["jid"].GetString());
    }
    return jids;
  }

  std::string metric_line(const std::string& reason) const {
    return "rocket_rides_enqueuer_unacknowledged_batches_total{queue=\"" + queue + "\",reason=\"" + reason + "\"}";
  }

  std::string queue;
  // No 5 s wait for more replicas before a diskless sync starts: a replica is ready in moments.
  RedisServer master{{"--repl-diskless-sync-delay", "0"}};
};

std::set<std::string> distinct(const std::multiset<std::string>& jids) { return {jids.begin(), jids.end()}; }

// Until `count` replicas acknowledge a WAIT: online in ROLE is not enough, since a master streams
// to a freshly synced replica only after its first REPLCONF ACK (up to a second later).
bool wait_for_replicas(const RedisServer& master, long long count) {
  rr::redis::Connection connection(rr::redis::parse_redis_url(master.url()));
  for (int i = 0; i < 100; ++i) {
    // WAIT counts replicas up to this client's last write; a client that wrote nothing gets
    // every online replica, ready or not.
    auto replies = connection.pipeline({{"INCR", "rr-test:replica-probe"}, {"WAIT", std::to_string(count), "100"}});
    if (replies.at(1).as_integer() >= count) return true;
  }
  return false;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(enqueuer_replicas, Fixture)

BOOST_AUTO_TEST_CASE(without_a_replica_the_batch_stays_staged_is_not_pushed_again_and_goes_with_the_same_jids_later) {
  stage(50);
  const auto staged = staged_jids();
  Enqueuer enqueuer(config(1000ms));  // refused three times, then delivering with the replica

  std::string why;
  try {
    enqueuer.run_once();
  } catch (const ReplicasShort& e) {
    why = e.what();
  }
  BOOST_TEST(why.find("acknowledged by 0 Redis replicas") != std::string::npos, why);
  BOOST_TEST(why.find("REDIS_MIN_REPLICAS is 1") != std::string::npos, why);
  BOOST_TEST(staged_jids() == staged);                  // rolled back
  BOOST_TEST(distinct(queued_jids(master)) == staged);  // though on the master, unacknowledged

  // While the master has no replica, nothing more is pushed: no duplicate per retry.
  BOOST_CHECK_THROW(enqueuer.run_once(), ReplicasShort);
  BOOST_CHECK_THROW(enqueuer.run_once(), ReplicasShort);
  BOOST_TEST(queued_jids(master).size() == 50u);
  BOOST_TEST(staged_jids() == staged);
  const std::string metrics = rr::metrics::default_registry().render();
  BOOST_TEST(metrics.find(metric_line("wait_short") + " 1") != std::string::npos, metrics);
  BOOST_TEST(metrics.find(metric_line("replicas_missing") + " 2") != std::string::npos, metrics);

  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  BOOST_REQUIRE(wait_for_replicas(master, 1));
  BOOST_TEST(enqueuer.run_once().enqueued == 50);
  BOOST_TEST(staged_jids().empty());
  auto delivered = queued_jids(master);
  BOOST_TEST(distinct(delivered) == staged);  // the same jids
  BOOST_TEST(delivered.size() == 100u);       // each twice: the unacknowledged push stayed
  BOOST_TEST(distinct(queued_jids(replica)) == staged);
}

BOOST_AUTO_TEST_CASE(with_a_replica_a_delivered_batch_is_already_on_the_replica_when_run_once_returns) {
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  BOOST_REQUIRE(wait_for_replicas(master, 1));
  stage(200);
  const auto staged = staged_jids();
  Enqueuer enqueuer(config(5000ms));
  BOOST_TEST(enqueuer.drain().enqueued == 200);
  auto on_replica = queued_jids(replica);  // read at once: WAIT made the replica acknowledge
  BOOST_TEST(on_replica.size() == 200u);
  BOOST_TEST(distinct(on_replica) == staged);
}

BOOST_AUTO_TEST_CASE(the_daemon_logs_one_line_per_refused_pass_saying_why_and_delivers_once_a_replica_is_back) {
  stage(10);
  const auto staged = staged_jids();
  auto env = binary_env();
  env["ENQUEUER_MAX_BACKOFF"] = "0.3";
  rr::test::ChildProcess daemon({rr::test::binary("rocket-rides-enqueuer")}, env);
  BOOST_REQUIRE_MESSAGE(daemon.wait_for_output("replicas online", 15s), daemon.output());
  BOOST_TEST(staged_jids() == staged);
  const std::string output = daemon.output();
  std::istringstream lines(output);
  std::string line;
  int refused = 0;
  while (std::getline(lines, line)) {
    if (line.find("enqueuer pass failed") == std::string::npos) continue;
    ++refused;
    BOOST_TEST(line.find("REDIS_MIN_REPLICAS is 1") != std::string::npos, line);
  }
  BOOST_TEST(refused >= 2);

  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!staged_jids().empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  BOOST_TEST(staged_jids().empty());
  BOOST_TEST(distinct(queued_jids(replica)) == staged);
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(15s).value_or(-1) == 0);
  BOOST_TEST(daemon.output().find("enqueuer recovered") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
