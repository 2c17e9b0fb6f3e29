// Through a real PgBouncer in transaction pooling mode (Debian's 1.18, no protocol-level prepared
// statements): named statements break there, unnamed ones do not; the API and the enqueuer run
// through it, ride out its restart, and the enqueuer polls when it has no direct connection to
// LISTEN on. The other database suites also run through PgBouncer (the *_pgbouncer CTest entries).
#include <signal.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <future>
#include <thread>

#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/migrations.hpp"
#include "common/http/client.hpp"
#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"
#include "support/api_process.hpp"
#include "support/pgbouncer.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/ride_fixture.hpp"
#include "support/staged_jobs.hpp"
#include "support/test_database.hpp"

using namespace rr::test;
using namespace std::chrono_literals;
namespace http = rr::http;

namespace {

// A direct database of its own, with a PgBouncer of two server connections in front: eight
// clients must share them, so a client's consecutive transactions land on different sessions.
struct BouncerFixture {
  TestDatabase db;
  PgBouncer bouncer{db.direct_url(), 2};
  std::string pooled_url = bouncer.route(db.direct_url());

  // Runs `transactions` transactions of one statement on each of `clients` threads, each thread
  // with a pool of its own; returns the errors.
  std::vector<std::string> hammer(rr::db::StatementMode mode, int clients, int transactions) {
    const rr::db::Statement probe{"rr_pgbouncer_probe", "SELECT $1::int + 1"};
    std::vector<std::future<std::vector<std::string>>> runs;
    for (int c = 0; c < clients; ++c) {
      runs.push_back(std::async(std::launch::async, [&, c] {
        std::vector<std::string> errors;
        rr::db::ConnectionPool pool(pooled_url, rr::db::SessionOptions{mode}, 1, 10s);
        for (int i = 0; i < transactions; ++i) {
          try {
            auto conn = pool.acquire();
            pqxx::work tx(conn.conn());
            auto rows = conn.exec(tx, probe, c * 1000 + i);
            if (rows[0][0].as<int>() != c * 1000 + i + 1) errors.push_back("wrong answer");
            tx.commit();
          } catch (const std::exception& e) {
            errors.push_back(e.what());
          }
        }
        return errors;
      }));
    }
    std::vector<std::string> errors;
    for (auto& run : runs) {
      auto some = run.get();
      errors.insert(errors.end(), some.begin(), some.end());
    }
    return errors;
  }
};

std::string pooled_backends(PgBouncer& bouncer) { return bouncer.admin("SHOW SERVERS"); }

}  // namespace

BOOST_FIXTURE_TEST_SUITE(through_pgbouncer, BouncerFixture)

BOOST_AUTO_TEST_CASE(the_fixture_runs_the_policy_of_deploy_pgbouncer_ini) {
  // An %include that goes wrong fails silently (PgBouncer runs on its defaults): check what is in
  // force against keys the deploy file changes from those defaults.
  auto config = bouncer.admin("SHOW CONFIG");
  auto value_of = [&](const std::string& key) {
    auto at = config.find("\n" + key + "|");
    if (at == std::string::npos) at = config.starts_with(key + "|") ? 0 : std::string::npos;
    if (at == std::string::npos) return std::string("(absent)");
    at = config.find('|', at) + 1;
    return config.substr(at, config.find('|', at) - at);
  };
  BOOST_TEST(value_of("pool_mode") == "transaction");
  BOOST_TEST(value_of("query_wait_timeout") == "10");
  BOOST_TEST(value_of("server_login_retry") == "1");
  BOOST_TEST(value_of("default_pool_size") == "2");  // the fixture's own, after the include
}

BOOST_AUTO_TEST_CASE(named_prepared_statements_break_there_which_is_what_the_fixture_must_show) {
  // The defect this mode exists for: a statement prepared in one transaction's server session is
  // missing from the next one's, or already there under the same name.
  auto errors = hammer(rr::db::StatementMode::prepared, 8, 40);
  BOOST_REQUIRE_MESSAGE(!errors.empty(), "8 clients on 2 server sessions never switched sessions");
  BOOST_TEST(errors.front().find("prepared statement") != std::string::npos, errors.front());
}

BOOST_AUTO_TEST_CASE(unnamed_statements_never_fail_there) {
  auto errors = hammer(rr::db::StatementMode::unnamed, 8, 40);
  BOOST_TEST(errors.empty(), (errors.empty() ? "" : errors.front()));
  // The eight clients really shared two server sessions.
  auto servers = pooled_backends(bouncer);
  BOOST_TEST(std::count(servers.begin(), servers.end(), '\n') <= 2, servers);
}

BOOST_AUTO_TEST_CASE(migrate_and_user_create_run_through_it) {
  TestDatabase empty(/*migrated=*/false);
  const std::string url = bouncer.route(empty.direct_url());
  EnvChanges env{{"DATABASE_URL", url}, {"DATABASE_PREPARED_STATEMENTS", "off"}};
  auto migrate = [&] { return run_command({binary("rocket-rides-api"), "migrate"}, env); };
  auto a = std::async(std::launch::async, migrate);
  auto b = std::async(std::launch::async, migrate);
  for (auto* run : {&a, &b}) {
    auto result = run->get();
    BOOST_TEST(result.exit_code == 0, result.err);
  }
  // Every migration applied exactly once (versions may have gaps while parallel branches merge).
  BOOST_TEST(empty.scalar("SELECT count(*) FROM schema_migrations") ==
             std::to_string(rr::db::embedded_migrations().size()));
  BOOST_TEST(empty.scalar("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                          "WHERE l.locktype = 'advisory' AND d.datname = current_database()") == "0");
  auto created = run_command(
      {binary("rocket-rides-api"), "user", "create", "--email", "bob@example.com", "--stripe-customer", "cus_bob"},
      env);
  BOOST_TEST(created.exit_code == 0, created.err);
  BOOST_TEST(created.out.size() > 20u);
}

BOOST_AUTO_TEST_CASE(the_api_serves_concurrent_rides_through_it_and_rides_out_its_restart) {
  StripeMock stripe;
  const std::string token = rr::auth::create_user(db.conn(), "alice@example.com", "cus_alice").token;
  ApiProcess api(db, stripe,
                 {{"DATABASE_URL", pooled_url},
                  {"DATABASE_PREPARED_STATEMENTS", "off"},
                  {"DATABASE_POOL_SIZE", "8"},
                  // 24 rides of one user at once: the point is concurrency through PgBouncer, not the limit.
                  {"API_MAX_IN_FLIGHT_PER_USER", "32"}});
  auto post = [&](const std::string& key) { return api.post_ride(token, key); };

  std::vector<std::string> keys;
  for (int i = 0; i < 24; ++i) keys.push_back(new_key());
  std::vector<std::future<http::ClientResponse>> answers;
  for (const auto& key : keys) answers.push_back(std::async(std::launch::async, post, key));
  std::vector<std::string> bodies;
  for (auto& answer : answers) {
    auto response = answer.get();
    BOOST_TEST(response.status == 201, response.body);
    bodies.push_back(response.body);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) BOOST_TEST(post(keys[i]).body == bodies[i]);
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides WHERE stripe_charge_id IS NOT NULL") == "24");
  BOOST_TEST(stripe.charges() == 24);

  // PgBouncer restarts: every pooled connection the API holds is cut. A client retrying its key
  // gets its ride, charged once, and never a 500.
  bouncer.restart();
  int final_status = 0;
  const auto key = new_key();
  for (int attempt = 0; attempt < 20 && final_status != 201; ++attempt) {
    auto response = post(key);
    BOOST_TEST(response.status != 500, response.body);
    final_status = response.status;
    if (final_status != 201) std::this_thread::sleep_for(250ms);
  }
  BOOST_TEST(final_status == 201);
  BOOST_TEST(stripe.charges() == 25);
  BOOST_TEST(api.running());
}

BOOST_AUTO_TEST_CASE(the_enqueuer_polls_without_a_direct_connection_and_listens_with_one) {
  RedisServer redis;
  const std::string queue = "pgbouncer-" + random_suffix(6);
  EnvChanges env{{"DATABASE_URL", pooled_url},
                 {"DATABASE_PREPARED_STATEMENTS", "off"},
                 {"LISTEN_DATABASE_URL", std::nullopt},
                 {"REDIS_URL", redis.url()},
                 {"ENQUEUER_QUEUE", queue},
                 {"NOTIFY_SOCKET", std::nullopt}};
  auto stage_one_and_wait = [&](ChildProcess& daemon) {
    {
      pqxx::work tx(db.conn());
      tx.exec("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', '[1]')");
      tx.commit();
    }
    notify_staged_jobs(db);  // as a stager does after its commit (EnqueuerWakeup)
    auto before = std::chrono::steady_clock::now();
    while (redis.cli({"LLEN", "queue:" + queue}).find('0') == 0 && std::chrono::steady_clock::now() - before < 5s) {
      std::this_thread::sleep_for(20ms);
    }
    BOOST_TEST(redis.cli({"LLEN", "queue:" + queue}) == "1\n", daemon.output());
    BOOST_TEST(db.scalar("SELECT count(*) FROM staged_jobs") == "0");
    redis.cli({"DEL", "queue:" + queue});
  };
  {
    ChildProcess polling({binary("rocket-rides-enqueuer")}, env);
    BOOST_REQUIRE_MESSAGE(polling.wait_for_output("enqueuer started", 15s), polling.output());
    BOOST_TEST(polling.output().find("wake_up=poll") != std::string::npos, polling.output());
    BOOST_TEST(polling.output().find("idle_sleep=250ms") != std::string::npos, polling.output());
    stage_one_and_wait(polling);
    polling.signal(SIGTERM);
    BOOST_TEST(polling.wait(15s).value_or(-1) == 0);
  }
  env["LISTEN_DATABASE_URL"] = db.direct_url();
  env["ENQUEUER_IDLE_SLEEP"] = "60";  // only the NOTIFY can deliver within the wait
  ChildProcess listening({binary("rocket-rides-enqueuer")}, env);
  BOOST_REQUIRE_MESSAGE(listening.wait_for_output("listening for staged jobs", 15s), listening.output());
  BOOST_TEST(listening.output().find("wake_up=listen") != std::string::npos, listening.output());
  stage_one_and_wait(listening);
  listening.signal(SIGTERM);
  BOOST_TEST(listening.wait(15s).value_or(-1) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
