// REDIS_URL parsing and the hiredis connection: replies and their types, pipelining, AUTH, SELECT,
// Unix sockets, and how errors, timeouts and a vanished server surface. Needs REDIS_URL.
#include <unistd.h>
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::redis::Connection;
using rr::redis::parse_redis_url;
using rr::redis::RedisError;
using rr::redis::RedisUrlError;
using rr::redis::Reply;

namespace {

using rr::test::RedisServer;

Connection shared_redis() { return Connection(parse_redis_url(rr::test::require_env("REDIS_URL"))); }

std::string unique_key(const std::string& what) { return "rr-test:" + what + ":" + rr::test::random_suffix(); }

// The message of the RedisUrlError `url` raises, or "" when it parses.
std::string url_error(const std::string& url) {
  try {
    parse_redis_url(url);
  } catch (const RedisUrlError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_url)

BOOST_AUTO_TEST_CASE(a_bare_host_gets_the_default_port_and_database_zero) {
  auto endpoint = parse_redis_url("redis://cache.internal");
  BOOST_TEST(endpoint.host == "cache.internal");
  BOOST_TEST(endpoint.port == 6379);
  BOOST_TEST(endpoint.db == 0);
  BOOST_TEST(!endpoint.password.has_value());
  BOOST_TEST(!endpoint.is_unix_socket());
}

BOOST_AUTO_TEST_CASE(port_database_and_password_are_all_read) {
  auto endpoint = parse_redis_url("redis://:s3cret@127.0.0.1:6380/4");
  BOOST_TEST(endpoint.host == "127.0.0.1");
  BOOST_TEST(endpoint.port == 6380);
  BOOST_TEST(endpoint.db == 4);
  BOOST_TEST(endpoint.password.value_or("") == "s3cret");
  BOOST_TEST(!endpoint.username.has_value());
}

BOOST_AUTO_TEST_CASE(an_acl_user_and_a_percent_encoded_password_are_decoded) {
  auto endpoint = parse_redis_url("redis://worker:p%40ss%3Aw%2Fd@redis:7000/");
  BOOST_TEST(endpoint.username.value_or("") == "worker");
  BOOST_TEST(endpoint.password.value_or("") == "p@ss:w/d");
  BOOST_TEST(endpoint.db == 0);
}

BOOST_AUTO_TEST_CASE(an_ipv6_host_is_written_in_brackets) {
  auto endpoint = parse_redis_url("redis://[::1]:6390/2");
  BOOST_TEST(endpoint.host == "::1");
  BOOST_TEST(endpoint.port == 6390);
  BOOST_TEST(endpoint.describe() == "[::1]:6390");
}

BOOST_AUTO_TEST_CASE(unix_socket_urls_and_bare_paths_name_a_socket) {
  auto url = parse_redis_url("unix:///run/redis/redis.sock");
  BOOST_TEST(url.socket_path == "/run/redis/redis.sock");
  BOOST_TEST(url.is_unix_socket());
  BOOST_TEST(url.db == 0);
  auto with_db = parse_redis_url("unix:///run/redis/redis.sock?db=3&password=x%26y");
  BOOST_TEST(with_db.db == 3);
  BOOST_TEST(with_db.password.value_or("") == "x&y");
  auto bare = parse_redis_url("/tmp/redis.sock");
  BOOST_TEST(bare.socket_path == "/tmp/redis.sock");
}

BOOST_AUTO_TEST_CASE(malformed_urls_are_rejected_with_a_reason) {
  BOOST_TEST(url_error("redis://:6379").find("host") != std::string::npos);
  BOOST_TEST(url_error("redis://h:0").find("port") != std::string::npos);
  BOOST_TEST(url_error("redis://h:65536").find("port") != std::string::npos);
  BOOST_TEST(url_error("redis://h:63x9").find("port") != std::string::npos);
  BOOST_TEST(url_error("redis://h:6379/x").find("database") != std::string::npos);
  BOOST_TEST(url_error("redis://h:6379/-1").find("database") != std::string::npos);
  BOOST_TEST(url_error("unix://relative.sock").find("absolute") != std::string::npos);
  BOOST_TEST(url_error("unix:///s.sock?timeout=3").find("timeout") != std::string::npos);
  BOOST_TEST(url_error("rediss://h").find("TLS") != std::string::npos);
  BOOST_TEST(url_error("http://h:6379").find("expected") != std::string::npos);
  BOOST_TEST(url_error("redis://:bad%zz@h").find("percent") != std::string::npos);
  BOOST_TEST(url_error("redis://[::1:6379").find("IPv6") != std::string::npos);
  BOOST_TEST(url_error("redis://h:6379/0?db=1").find("parameters") != std::string::npos);
  BOOST_TEST(url_error("redis://h:6379/0 1").find("not a valid URL") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_plus_in_a_password_stays_a_plus) {
  BOOST_TEST(parse_redis_url("unix:///s.sock?password=a+b").password.value_or("") == "a+b");
  BOOST_TEST(parse_redis_url("redis://:a+b@h").password.value_or("") == "a+b");
}

BOOST_AUTO_TEST_CASE(errors_never_repeat_the_password) {
  std::string message = url_error("redis://:hunter2@h:99999/0");
  BOOST_TEST(!message.empty());
  BOOST_TEST(message.find("hunter2") == std::string::npos);
  BOOST_TEST(parse_redis_url("redis://:hunter2@h:1/0").describe().find("hunter2") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_fragment_is_refused_so_a_password_cut_at_a_hash_never_becomes_the_host) {
  // An unencoded '#' ends the authority: what comes before it, a password's start, would be the
  // host, and the host is what log lines name.
  std::string message = url_error("redis://hunter2#x@redis:6379/0");
  BOOST_TEST(message.find("%23") != std::string::npos, message);
  BOOST_TEST(message.find("hunter2") == std::string::npos, message);
  BOOST_TEST(url_error("redis://:pass#word@h:6379").find("%23") != std::string::npos);
  // The socket's password would be cut at the '#' without a word.
  BOOST_TEST(url_error("unix:///s.sock?password=pass#word").find("%23") != std::string::npos);
  BOOST_TEST(url_error("/s.sock#x").find("%23") != std::string::npos);
  BOOST_TEST(parse_redis_url("redis://:pass%23word@h:6379").password.value_or("") == "pass#word");
}

BOOST_AUTO_TEST_CASE(an_unknown_parameter_after_the_password_is_not_repeated) {
  // A password with an unencoded '&': its rest reads as a parameter's name.
  std::string message = url_error("unix:///s.sock?password=pass&word-hunter2");
  BOOST_TEST(message.find("hunter2") == std::string::npos, message);
  BOOST_TEST(message.find("%26") != std::string::npos, message);
  BOOST_TEST(url_error("/s.sock?db=1&password=x&hunter2=1").find("hunter2") == std::string::npos);
  // Before any password, the name helps and is not a secret.
  BOOST_TEST(url_error("unix:///s.sock?timeout=3&password=x").find("'timeout'") != std::string::npos);
  BOOST_TEST(parse_redis_url("unix:///s.sock?password=pass%26word").password.value_or("") == "pass&word");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(redis_connection)

BOOST_AUTO_TEST_CASE(a_pipeline_returns_one_typed_reply_per_command_in_order) {
  auto redis = shared_redis();
  std::string key = unique_key("pipeline");
  std::string list = unique_key("list");
  auto replies = redis.pipeline({{"SET", key, "v"},
                                 {"INCR", key + ":n"},
                                 {"GET", key},
                                 {"GET", key + ":missing"},
                                 {"RPUSH", list, "a", "b"},
                                 {"LRANGE", list, "0", "-1"},
                                 {"DEL", key, key + ":n", list}});
  BOOST_REQUIRE(replies.size() == 7u);
  BOOST_TEST(replies[0].as_string() == "OK");
  BOOST_TEST(replies[1].as_integer() == 1);
  BOOST_TEST(replies[2].as_string() == "v");
  BOOST_TEST(replies[3].is_nil());
  BOOST_TEST(replies[4].as_integer() == 2);
  BOOST_REQUIRE(replies[5].as_array().size() == 2u);
  BOOST_TEST(replies[5].as_array()[1].as_string() == "b");
  BOOST_TEST(replies[6].as_integer() == 3);
  BOOST_TEST(!redis.broken());
}

BOOST_AUTO_TEST_CASE(binary_values_with_nul_bytes_round_trip_intact) {
  auto redis = shared_redis();
  std::string key = unique_key("binary");
  std::string value("a\0b\r\nc", 6);
  redis.command({"SET", key, value});
  BOOST_TEST(redis.command({"GET", key}).as_string() == value);
  redis.command({"DEL", key});
}

BOOST_AUTO_TEST_CASE(reading_a_reply_as_the_wrong_type_throws_instead_of_reading_garbage) {
  auto redis = shared_redis();
  Reply nil = redis.command({"GET", unique_key("absent")});
  BOOST_CHECK_THROW(nil.as_string(), RedisError);
  BOOST_CHECK_THROW(nil.as_integer(), RedisError);
  BOOST_CHECK_THROW(redis.command({"PING"}).as_array(), RedisError);
}

BOOST_AUTO_TEST_CASE(an_error_reply_throws_naming_the_command_after_reading_every_reply) {
  auto redis = shared_redis();
  std::string key = unique_key("wrongtype");
  std::string after = unique_key("after");
  redis.command({"SET", key, "scalar"});
  try {
    redis.pipeline({{"LPUSH", key, "x"}, {"SET", after, "ran"}});
    BOOST_FAIL("expected a RedisError");
  } catch (const RedisError& e) {
    std::string message = e.what();
    BOOST_TEST(message.find("LPUSH") != std::string::npos);
    BOOST_TEST(message.find("WRONGTYPE") != std::string::npos);
  }
  BOOST_TEST(redis.broken());
  BOOST_CHECK_THROW(redis.command({"PING"}), RedisError);
  auto fresh = shared_redis();
  BOOST_TEST(fresh.command({"GET", after}).as_string() == "ran");
  fresh.command({"DEL", key, after});
}

BOOST_AUTO_TEST_CASE(connecting_to_a_closed_port_fails_fast_naming_the_address) {
  auto port = rr::test::free_port();
  auto start = std::chrono::steady_clock::now();
  try {
    Connection redis(parse_redis_url("redis://127.0.0.1:" + std::to_string(port)));
    BOOST_FAIL("expected a RedisError");
  } catch (const RedisError& e) {
    BOOST_TEST(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  }
  BOOST_TEST((std::chrono::steady_clock::now() - start) < 3s);
}

BOOST_AUTO_TEST_CASE(a_password_is_sent_with_auth_and_a_wrong_one_is_refused) {
  RedisServer server({"--requirepass", "right-pass"});
  std::string base = "127.0.0.1:" + std::to_string(server.port());
  Connection good(parse_redis_url("redis://:right-pass@" + base));
  BOOST_TEST(good.command({"PING"}).as_string() == "PONG");
  try {
    Connection bad(parse_redis_url("redis://:wrong-pass@" + base));
    BOOST_FAIL("expected a RedisError");
  } catch (const RedisError& e) {
    std::string message = e.what();
    BOOST_TEST(message.find("AUTH") != std::string::npos);
    BOOST_TEST(message.find("wrong-pass") == std::string::npos);
  }
  Connection none(parse_redis_url("redis://" + base));
  BOOST_CHECK_THROW(none.command({"SET", "k", "v"}), RedisError);
}

BOOST_AUTO_TEST_CASE(the_database_number_selects_a_separate_keyspace) {
  RedisServer server;
  std::string base = "redis://127.0.0.1:" + std::to_string(server.port());
  Connection db5(parse_redis_url(base + "/5"));
  db5.command({"SET", "where", "five"});
  Connection db0(parse_redis_url(base));
  BOOST_TEST(db0.command({"GET", "where"}).is_nil());
  BOOST_TEST(Connection(parse_redis_url(base + "/5")).command({"GET", "where"}).as_string() == "five");
}

BOOST_AUTO_TEST_CASE(a_unix_socket_url_connects) {
  std::string socket = "/tmp/rr-redis-" + rr::test::random_suffix() + ".sock";
  RedisServer server({"--unixsocket", socket, "--unixsocketperm", "700"});
  // The TCP port is up; give the socket a moment too.
  for (int i = 0; i < 50 && ::access(socket.c_str(), F_OK) != 0; ++i) std::this_thread::sleep_for(20ms);
  Connection by_url(parse_redis_url("unix://" + socket + "?db=1"));
  by_url.command({"SET", "k", "unix"});
  Connection bare(parse_redis_url(socket));
  BOOST_TEST(bare.command({"GET", "k"}).is_nil());  // db 0
  BOOST_TEST(bare.command({"PING"}).as_string() == "PONG");
}

BOOST_AUTO_TEST_CASE(a_server_that_goes_away_breaks_the_connection_with_a_clear_error) {
  RedisServer server;
  Connection redis(parse_redis_url("redis://127.0.0.1:" + std::to_string(server.port())));
  BOOST_TEST(redis.command({"PING"}).as_string() == "PONG");
  server.stop();
  try {
    redis.pipeline({{"LPUSH", "q", "x"}, {"SADD", "queues", "q"}});
    BOOST_FAIL("expected a RedisError");
  } catch (const RedisError& e) {
    BOOST_TEST(std::string(e.what()).find("127.0.0.1:" + std::to_string(server.port())) != std::string::npos);
  }
  BOOST_TEST(redis.broken());
}

BOOST_AUTO_TEST_CASE(a_reply_slower_than_the_command_timeout_fails_instead_of_hanging) {
  rr::redis::ConnectOptions options;
  options.command_timeout = 300ms;
  Connection redis(parse_redis_url(rr::test::require_env("REDIS_URL")), options);
  auto start = std::chrono::steady_clock::now();
  BOOST_CHECK_THROW(redis.command({"BLPOP", unique_key("never"), "3"}), RedisError);
  BOOST_TEST((std::chrono::steady_clock::now() - start) < 2s);
  BOOST_TEST(redis.broken());
}

BOOST_AUTO_TEST_SUITE_END()
