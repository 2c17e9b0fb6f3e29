// TCP liveness on every libpq session (common/db/tcp_keepalives.hpp): the parameters DATABASE_URL
// and LISTEN_DATABASE_URL carry once parsed, an operator's own values kept, and the options in
// effect on the socket of a real session (read back with getsockopt on PQsocket).
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "common/config/database_tcp.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/db/connection.hpp"
#include "common/db/tcp_keepalives.hpp"
#include "common/jobs/enqueuer_settings.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::config::DatabaseSettings;
using rr::config::Environment;

namespace {

int socket_option(int socket, int level, int name) {
  int value = -1;
  socklen_t length = sizeof value;
  BOOST_REQUIRE(::getsockopt(socket, level, name, &value, &length) == 0);
  return value;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tcp_keepalives)

BOOST_AUTO_TEST_CASE(every_parameter_is_added_to_a_url_that_sets_none) {
  BOOST_TEST(rr::db::with_tcp_keepalives("postgresql://u@h:5432/db", 15s) ==
             "postgresql://u@h:5432/db?keepalives=1&keepalives_idle=10&keepalives_interval=3&keepalives_count=3"
             "&tcp_user_timeout=15000");
  BOOST_TEST(rr::db::with_tcp_keepalives("postgresql://u@h/db?sslmode=disable", 2500ms) ==
             "postgresql://u@h/db?sslmode=disable&keepalives=1&keepalives_idle=10&keepalives_interval=3"
             "&keepalives_count=3&tcp_user_timeout=2500");
}

BOOST_AUTO_TEST_CASE(a_parameter_the_operator_set_is_kept_as_written) {
  BOOST_TEST(rr::db::with_tcp_keepalives("postgresql://h/db?tcp_user_timeout=500&keepalives_idle=60", 15s) ==
             "postgresql://h/db?tcp_user_timeout=500&keepalives_idle=60&keepalives=1&keepalives_interval=3"
             "&keepalives_count=3");
  BOOST_TEST(rr::db::with_tcp_keepalives("postgresql://h/db?keepalives=0&", 15s).find("keepalives=1") ==
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(database_url_and_listen_database_url_carry_them_with_the_setting) {
  auto env = Environment::from_map({{"DATABASE_URL", "postgresql://u@h/db"},
                                    {"DATABASE_TCP_USER_TIMEOUT", "4"},
                                    {"LISTEN_DATABASE_URL", "postgresql://u@direct/db"},
                                    {"REDIS_URL", "redis://127.0.0.1:6379/0"}});
  auto settings = DatabaseSettings::from_env(env);
  BOOST_TEST(rr::config::database_tcp_user_timeout(env).count() == 4000);
  BOOST_TEST(settings.url == rr::db::with_tcp_keepalives("postgresql://u@h/db", 4s));
  BOOST_TEST(rr::jobs::EnqueuerSettings::from_env(env).listen_url ==
             rr::db::with_tcp_keepalives("postgresql://u@direct/db", 4s));
  BOOST_TEST(DatabaseSettings::from_env(Environment::from_map({{"DATABASE_URL", "postgresql://h/db"}})).url ==
             rr::db::with_tcp_keepalives("postgresql://h/db", 15s));
  for (const char* bad : {"-1", "15s", "3601"}) {
    try {
      DatabaseSettings::from_env(
          Environment::from_map({{"DATABASE_URL", "postgresql://h/db"}, {"DATABASE_TCP_USER_TIMEOUT", bad}}));
      BOOST_FAIL("accepted DATABASE_TCP_USER_TIMEOUT=" << bad);
    } catch (const rr::config::ConfigError& e) {
      BOOST_TEST(e.variable() == "DATABASE_TCP_USER_TIMEOUT");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_session_opened_from_the_settings_has_them_on_its_socket) {
  rr::test::TestDatabase db(/*migrated=*/false);
  auto settings = DatabaseSettings::from_env(
      Environment::from_map({{"DATABASE_URL", db.direct_url()}, {"DATABASE_TCP_USER_TIMEOUT", "7.5"}}));
  rr::db::Connection connection(settings.url);
  int socket = PQsocket(connection.session());
  BOOST_REQUIRE(socket >= 0);
  BOOST_TEST(socket_option(socket, SOL_SOCKET, SO_KEEPALIVE) == 1);
  BOOST_TEST(socket_option(socket, IPPROTO_TCP, TCP_KEEPIDLE) == 10);
  BOOST_TEST(socket_option(socket, IPPROTO_TCP, TCP_KEEPINTVL) == 3);
  BOOST_TEST(socket_option(socket, IPPROTO_TCP, TCP_KEEPCNT) == 3);
  BOOST_TEST(socket_option(socket, IPPROTO_TCP, TCP_USER_TIMEOUT) == 7500);
}

BOOST_AUTO_TEST_SUITE_END()
