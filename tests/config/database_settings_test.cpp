// DATABASE_PREPARED_STATEMENTS, DATABASE_STATEMENT_TIMEOUT and the enqueuer's LISTEN_DATABASE_URL: defaults, what "off"
// changes, and bad values named.
#include <boost/test/unit_test.hpp>

#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/db/tcp_keepalives.hpp"
#include "common/jobs/enqueuer_settings.hpp"

using rr::config::ConfigError;
using rr::config::Environment;
using rr::db::StatementMode;

namespace {

const std::string kDatabase = "postgresql://u@127.0.0.1:6432/db";
const std::string kDirect = "postgresql://u@127.0.0.1:5432/db";

std::string failing_variable(const Environment& env) {
  try {
    rr::jobs::EnqueuerSettings::from_env(env);
  } catch (const ConfigError& e) {
    return e.variable();
  }
  return "";
}

Environment enqueuer_env(std::map<std::string, std::string> extra) {
  std::map<std::string, std::string> values{{"DATABASE_URL", kDatabase}, {"REDIS_URL", "redis://127.0.0.1:6379/0"}};
  for (auto& [k, v] : extra) values[k] = v;
  return Environment::from_map(values);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(database_settings)

BOOST_AUTO_TEST_CASE(prepared_statements_are_on_unless_switched_off) {
  using rr::config::DatabaseSettings;
  BOOST_TEST((DatabaseSettings::from_env(enqueuer_env({})).session.statements == StatementMode::prepared));
  BOOST_TEST((DatabaseSettings::from_env(enqueuer_env({{"DATABASE_PREPARED_STATEMENTS", "on"}})).session.statements ==
              StatementMode::prepared));
  BOOST_TEST((DatabaseSettings::from_env(enqueuer_env({{"DATABASE_PREPARED_STATEMENTS", "off"}})).session.statements ==
              StatementMode::unnamed));
}

BOOST_AUTO_TEST_CASE(anything_but_on_or_off_is_named) {
  for (const char* bad : {"yes", "0", "OFF ", "disabled"}) {
    BOOST_TEST(
        failing_variable(enqueuer_env({{"DATABASE_PREPARED_STATEMENTS", bad}})) == "DATABASE_PREPARED_STATEMENTS", bad);
  }
}

BOOST_AUTO_TEST_CASE(every_statement_is_bounded_by_thirty_seconds_unless_told_otherwise) {
  using rr::config::DatabaseSettings;
  BOOST_TEST(DatabaseSettings::from_env(enqueuer_env({})).session.statement_timeout.count() == 30000);
  BOOST_TEST(DatabaseSettings::from_env(enqueuer_env({{"DATABASE_STATEMENT_TIMEOUT", "2.5"}}))
                 .session.statement_timeout.count() == 2500);
  BOOST_TEST(DatabaseSettings::from_env(enqueuer_env({{"DATABASE_STATEMENT_TIMEOUT", "0"}}))
                 .session.statement_timeout.count() == 0);
  for (const char* bad : {"-1", "30s", "forever", "86401"}) {
    BOOST_TEST(failing_variable(enqueuer_env({{"DATABASE_STATEMENT_TIMEOUT", bad}})) == "DATABASE_STATEMENT_TIMEOUT",
               bad);
  }
}

BOOST_AUTO_TEST_CASE(with_prepared_statements_the_enqueuer_listens_on_database_url) {
  auto config = rr::jobs::EnqueuerSettings::from_env(enqueuer_env({}));
  BOOST_TEST(config.listen_url == config.database.url);
  BOOST_TEST(config.listen_url.starts_with(kDatabase + "?"));
  BOOST_TEST(config.loop.idle_sleep.count() == 5000);
}

BOOST_AUTO_TEST_CASE(without_them_and_without_a_direct_url_it_polls_four_times_a_second) {
  auto config = rr::jobs::EnqueuerSettings::from_env(enqueuer_env({{"DATABASE_PREPARED_STATEMENTS", "off"}}));
  BOOST_TEST(config.listen_url.empty());
  BOOST_TEST(config.loop.idle_sleep.count() == 250);
}

BOOST_AUTO_TEST_CASE(a_direct_url_for_listen_is_used_whatever_the_mode) {
  for (const char* mode : {"on", "off"}) {
    auto config = rr::jobs::EnqueuerSettings::from_env(
        enqueuer_env({{"DATABASE_PREPARED_STATEMENTS", mode}, {"LISTEN_DATABASE_URL", kDirect}}));
    BOOST_TEST(config.listen_url == rr::db::with_tcp_keepalives(kDirect, std::chrono::seconds(15)));
    BOOST_TEST(config.loop.idle_sleep.count() == 5000);
  }
}

BOOST_AUTO_TEST_CASE(an_explicit_idle_sleep_wins) {
  auto config = rr::jobs::EnqueuerSettings::from_env(
      enqueuer_env({{"DATABASE_PREPARED_STATEMENTS", "off"}, {"ENQUEUER_IDLE_SLEEP", "1.5"}}));
  BOOST_TEST(config.loop.idle_sleep.count() == 1500);
}

BOOST_AUTO_TEST_CASE(a_listen_url_that_is_not_postgres_is_named) {
  BOOST_TEST(failing_variable(enqueuer_env({{"LISTEN_DATABASE_URL", "mysql://u@h/db"}})) == "LISTEN_DATABASE_URL");
}

BOOST_AUTO_TEST_SUITE_END()
