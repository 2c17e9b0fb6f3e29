// Sentinel discovery against real redis-server and redis-sentinel processes: the settings and
// their exits, ROLE, asking sentinels in turn (down, hung, not knowing the name), the ROLE check
// after discovery, and the database and password REDIS_URL still gives. Starts its own servers.
#include <signal.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "common/config/environment.hpp"
#include "common/jobs/enqueuer_settings.hpp"
#include "common/redis/master_connector.hpp"
#include "common/redis/sentinel_discovery.hpp"
#include "common/redis/sentinel_list.hpp"
#include "common/redis/server_role.hpp"
#include "support/process.hpp"
#include "support/sentinel_group.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::redis::MasterConnector;
using rr::redis::parse_sentinel_list;
using rr::redis::RedisEndpoint;
using rr::redis::RedisError;
using rr::redis::RedisTarget;
using rr::redis::SentinelDiscovery;
using rr::redis::ServerRole;

namespace {

std::string list_error(const std::string& text) {
  try {
    parse_sentinel_list(text);
  } catch (const rr::redis::RedisUrlError& e) {
    return e.what();
  }
  return "";
}

// The variable a ConfigError names, or "" when the settings parse.
std::string config_error(std::map<std::string, std::string> values) {
  values.emplace("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/none");
  try {
    rr::jobs::EnqueuerSettings::from_env(rr::config::Environment::from_map(values));
  } catch (const rr::config::ConfigError& e) {
    return e.variable();
  }
  return "";
}

rr::jobs::EnqueuerSettings parsed(std::map<std::string, std::string> values) {
  values.emplace("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/none");
  return rr::jobs::EnqueuerSettings::from_env(rr::config::Environment::from_map(values));
}

std::vector<RedisEndpoint> endpoints(const std::string& list) { return parse_sentinel_list(list); }

// One group for the discovery cases: starting it and letting the sentinels find each other takes
// a few seconds. Cases that stop a sentinel start it again.
rr::test::SentinelGroup& group() {
  static rr::test::SentinelGroup shared;
  static bool watched = [] {
    BOOST_REQUIRE_MESSAGE(shared.wait_until_watched(1, 20s), "the sentinels did not settle");
    return true;
  }();
  (void)watched;
  return shared;
}

RedisTarget target_of(rr::test::SentinelGroup& g, const std::string& redis_url = "redis://127.0.0.1/0") {
  RedisTarget target;
  target.endpoint = rr::redis::parse_redis_url(redis_url);
  target.sentinels = endpoints(g.sentinel_list());
  target.sentinel_master = g.master_name();
  return target;
}

std::string port_of(std::uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

}  // namespace

BOOST_AUTO_TEST_SUITE(sentinel_settings)

BOOST_AUTO_TEST_CASE(a_sentinel_list_reads_hosts_ports_spaces_and_ipv6) {
  auto list = parse_sentinel_list("127.0.0.1:26379, sentinel-b.internal:26380 ,[::1]:26381");
  BOOST_REQUIRE(list.size() == 3u);
  BOOST_TEST(list[0].describe() == "127.0.0.1:26379");
  BOOST_TEST(list[1].host == "sentinel-b.internal");
  BOOST_TEST(list[1].port == 26380);
  BOOST_TEST(list[2].host == "::1");
  BOOST_TEST(list[2].port == 26381);
}

BOOST_AUTO_TEST_CASE(a_bad_sentinel_entry_is_refused_with_what_is_wrong) {
  BOOST_TEST(list_error("127.0.0.1").find("expected host:port") != std::string::npos);
  BOOST_TEST(list_error("127.0.0.1:0").find("port") != std::string::npos);
  BOOST_TEST(list_error("127.0.0.1:65536").find("port") != std::string::npos);
  BOOST_TEST(list_error("127.0.0.1:26379,").find("empty entry") != std::string::npos);
  BOOST_TEST(list_error("a:1,a:1").find("listed twice") != std::string::npos);
  BOOST_TEST(list_error("::1:26379").find("IPv6") != std::string::npos);
  BOOST_TEST(list_error(":26379").find("host is missing") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_host_with_a_bracket_is_refused_so_every_list_read_can_be_written_back) {
  // "[[]:8" read as host "[", which describe() wrote as "[:8", a list no one could read back.
  for (std::string entry : {"[[]:8", "[[a]:1", "a]:1", "[a[b]:1", "x[1]:2"}) {
    BOOST_TEST(list_error(entry).find("characters a host name cannot have") != std::string::npos, entry);
  }
  std::string written;
  for (const auto& sentinel : endpoints("[::1]:1,[host]:2,h.example:3")) {
    written += (written.empty() ? "" : ",") + sentinel.describe();
  }
  BOOST_TEST(written == "[::1]:1,host:2,h.example:3");
  BOOST_TEST(endpoints(written).size() == 3u);
}

BOOST_AUTO_TEST_CASE(sentinels_and_master_name_come_as_a_pair_and_redis_url_becomes_optional) {
  BOOST_TEST(config_error({{"REDIS_SENTINELS", "127.0.0.1:26379"}}) == "REDIS_SENTINEL_MASTER");
  BOOST_TEST(config_error({{"REDIS_SENTINEL_MASTER", "mymaster"}}) == "REDIS_SENTINELS");
  BOOST_TEST(config_error({{"REDIS_SENTINELS", "127.0.0.1"}, {"REDIS_SENTINEL_MASTER", "m"}}) == "REDIS_SENTINELS");
  BOOST_TEST(config_error({{"REDIS_SENTINELS", "127.0.0.1:1"}, {"REDIS_SENTINEL_MASTER", "my master"}}) ==
             "REDIS_SENTINEL_MASTER");
  BOOST_TEST(config_error({{"REDIS_SENTINELS", "127.0.0.1:1"},
                           {"REDIS_SENTINEL_MASTER", "m"},
                           {"REDIS_URL", "unix:///run/redis.sock"}}) == "REDIS_URL");

  auto config = parsed({{"REDIS_SENTINELS", "127.0.0.1:1,127.0.0.1:2"}, {"REDIS_SENTINEL_MASTER", "mymaster"}});
  BOOST_TEST(config.redis.uses_sentinels());
  BOOST_TEST(config.redis.sentinels.size() == 2u);
  BOOST_TEST(config.redis.sentinel_master == "mymaster");
  BOOST_TEST(config.redis.endpoint.db == 0);
  BOOST_TEST(!config.redis.endpoint.password.has_value());

  auto with_url = parsed({{"REDIS_SENTINELS", "127.0.0.1:1"},
                          {"REDIS_SENTINEL_MASTER", "mymaster"},
                          {"REDIS_URL", "redis://:s3cret@ignored-host:1/5"}});
  BOOST_TEST(with_url.redis.endpoint.db == 5);
  BOOST_TEST(with_url.redis.endpoint.password.value_or("") == "s3cret");
  BOOST_TEST(with_url.redis.describe().find("s3cret") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(redis_min_replicas_defaults_to_zero_and_is_a_small_non_negative_integer) {
  BOOST_TEST(parsed({{"REDIS_URL", "redis://127.0.0.1/0"}}).replicas.required == 0);
  BOOST_TEST(!parsed({{"REDIS_URL", "redis://127.0.0.1/0"}}).replicas.enabled());
  BOOST_TEST(parsed({{"REDIS_URL", "redis://127.0.0.1/0"}, {"REDIS_MIN_REPLICAS", "2"}}).replicas.required == 2);
  BOOST_TEST(config_error({{"REDIS_URL", "redis://127.0.0.1/0"}, {"REDIS_MIN_REPLICAS", "-1"}}) ==
             "REDIS_MIN_REPLICAS");
  BOOST_TEST(config_error({{"REDIS_URL", "redis://127.0.0.1/0"}, {"REDIS_MIN_REPLICAS", "one"}}) ==
             "REDIS_MIN_REPLICAS");
  auto wait = parsed({{"REDIS_URL", "redis://127.0.0.1/0"}, {"REDIS_MIN_REPLICAS", "1"}}).replicas.wait_command();
  BOOST_TEST(wait == (std::vector<std::string>{"WAIT", "1", "2000"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_binary_exits_two_with_one_line_naming_a_bad_sentinel_setting) {
  const rr::test::EnvChanges base{{"DATABASE_URL", "postgresql://postgres@127.0.0.1:1/none"},
                                  {"REDIS_URL", std::nullopt},
                                  {"NOTIFY_SOCKET", std::nullopt}};
  for (const auto& [variable, env] : std::vector<std::pair<std::string, rr::test::EnvChanges>>{
           {"REDIS_SENTINELS", {{"REDIS_SENTINELS", "127.0.0.1"}, {"REDIS_SENTINEL_MASTER", "m"}}},
           {"REDIS_SENTINEL_MASTER", {{"REDIS_SENTINELS", "127.0.0.1:26379"}}},
           {"REDIS_MIN_REPLICAS", {{"REDIS_URL", "redis://127.0.0.1/0"}, {"REDIS_MIN_REPLICAS", "many"}}}}) {
    auto changes = base;
    for (const auto& [name, value] : env) changes[name] = value;
    auto result = rr::test::run_command({rr::test::binary("rocket-rides-enqueuer"), "--once"}, changes);
    const std::string output = result.out + result.err;
    BOOST_TEST(result.exit_code == 2, variable);
    BOOST_TEST(output.find("variable=" + variable) != std::string::npos, output);
    BOOST_TEST(std::count(output.begin(), output.end(), '\n') == 1, output);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sentinel_discovery)

BOOST_AUTO_TEST_CASE(role_tells_a_master_with_its_replica_from_a_replica_and_a_sentinel) {
  auto& g = group();
  rr::redis::Connection master(rr::redis::parse_redis_url(g.first_master().url()));
  ServerRole role = rr::redis::query_role(master);
  BOOST_TEST(role.name() == "master");
  BOOST_TEST(role.replicas == 1u);

  rr::redis::Connection replica(rr::redis::parse_redis_url(g.first_replica().url()));
  BOOST_TEST(rr::redis::query_role(replica).name() == "replica");

  rr::redis::Connection sentinel(endpoints(g.sentinel(0).address()).front());
  BOOST_TEST(rr::redis::query_role(sentinel).name() == "sentinel");
}

BOOST_AUTO_TEST_CASE(the_sentinels_name_the_master_and_the_connector_reaches_it_in_redis_urls_database) {
  auto& g = group();
  SentinelDiscovery discovery(endpoints(g.sentinel_list()), g.master_name());
  auto found = discovery.find_master();
  BOOST_TEST(found.master.describe() == port_of(g.first_master().port()));
  BOOST_TEST(found.sentinel.describe() == g.sentinel(0).address());

  MasterConnector connector(target_of(g, "redis://127.0.0.1:1/3"));  // host and port ignored
  auto connection = connector.connect();
  BOOST_TEST(connector.current_master()->describe() == port_of(g.first_master().port()));
  const std::string key = "rr-test:sentinel:" + rr::test::random_suffix();
  connection.command({"SET", key, "in-db-3"});
  BOOST_TEST(g.first_master().cli({"-n", "3", "GET", key}) == "in-db-3\n");
  BOOST_TEST(g.first_master().cli({"-n", "0", "EXISTS", key}) == "0\n");
  g.first_master().cli({"-n", "3", "DEL", key});
}

BOOST_AUTO_TEST_CASE(a_down_sentinel_is_skipped_and_the_one_that_answered_is_asked_first_next_time) {
  auto& g = group();
  g.sentinel(0).stop();
  SentinelDiscovery discovery(endpoints(g.sentinel_list()), g.master_name());
  auto found = discovery.find_master();
  BOOST_TEST(found.master.describe() == port_of(g.first_master().port()));
  BOOST_TEST(found.sentinel.describe() == g.sentinel(1).address());
  BOOST_TEST(discovery.sentinels().front().describe() == g.sentinel(1).address());
  BOOST_TEST(discovery.sentinels().back().describe() == g.sentinel(2).address());
  g.sentinel(0).start();
  BOOST_TEST(discovery.find_master().sentinel.describe() == g.sentinel(1).address());
}

BOOST_AUTO_TEST_CASE(a_hung_sentinel_times_out_and_the_next_one_answers) {
  auto& g = group();
  ::kill(g.sentinel(0).pid(), SIGSTOP);  // accepts connections (the kernel does), answers nothing
  SentinelDiscovery discovery(endpoints(g.sentinel_list()), g.master_name());
  const auto started = std::chrono::steady_clock::now();
  auto found = discovery.find_master();
  const auto took = std::chrono::steady_clock::now() - started;
  ::kill(g.sentinel(0).pid(), SIGCONT);
  BOOST_TEST(found.sentinel.describe() == g.sentinel(1).address());
  BOOST_TEST(took < 3s);
}

BOOST_AUTO_TEST_CASE(with_every_sentinel_down_discovery_fails_naming_each_and_works_again_when_they_return) {
  auto& g = group();
  for (std::size_t i = 0; i < g.sentinel_count(); ++i) g.sentinel(i).stop();
  MasterConnector connector(target_of(g));
  std::string message;
  try {
    connector.connect();
  } catch (const rr::redis::NoSentinelAnswered& e) {
    message = e.what();
  }
  for (std::size_t i = 0; i < g.sentinel_count(); ++i) {
    BOOST_TEST(message.find(g.sentinel(i).address()) != std::string::npos, message);
    g.sentinel(i).start();
  }
  BOOST_TEST(connector.connect().command({"PING"}).as_string() == "PONG");
}

BOOST_AUTO_TEST_CASE(a_master_name_no_sentinel_monitors_is_reported_as_such) {
  auto& g = group();
  SentinelDiscovery discovery(endpoints(g.sentinel_list()), "no-such-master");
  std::string message;
  try {
    discovery.find_master();
  } catch (const rr::redis::NoSentinelAnswered& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("does not monitor a master named 'no-such-master'") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(a_server_the_sentinels_name_that_answers_role_replica_is_refused) {
  auto& g = group();
  // A sentinel of its own that believes the replica is a master, as a lagging sentinel would.
  rr::test::SentinelServer confused("confused", g.first_replica().port(), 1, {60000, 180000});
  RedisTarget target;
  target.endpoint = rr::redis::parse_redis_url("redis://127.0.0.1/0");
  target.sentinels = endpoints(confused.address());
  target.sentinel_master = "confused";
  MasterConnector connector(target);
  std::string message;
  try {
    connector.connect();
  } catch (const RedisError& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("answers ROLE replica; asking the sentinels again") != std::string::npos, message);
  BOOST_TEST(!connector.current_master().has_value());
}

BOOST_AUTO_TEST_SUITE_END()
