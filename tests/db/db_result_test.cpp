// common/db's own libpq types against a real PostgreSQL: db::Connection (the session common/db
// opens and closes, lent to libpqxx for transactions), db::Result and its rows and fields (an
// owned PGresult read as text), and the errors a failed statement turns into (libpqxx's exception
// types with the SQLSTATE, classified by db::outage_message) on the statements path.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/db/connection.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/db/outage.hpp"
#include "common/db/result.hpp"
#include "common/db/statements.hpp"
#include "common/db/transaction.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;

namespace {

const rr::db::Statement kValues{"db_result_values",
                                "SELECT $1::bigint AS big, $2::int AS small, $3::boolean AS yes, "
                                "$4::boolean AS no, $5::float8 AS ratio, $6::text AS words, NULL::text AS nothing"};
const rr::db::Statement kNumbers{"db_result_numbers", "SELECT n FROM generate_series(1, $1::int) AS n"};
const rr::db::Statement kBytesMatch{"db_result_bytes", "SELECT $1::bytea = decode($2, 'hex'), length($1::bytea)"};
const rr::db::Statement kInsertThing{"db_result_insert", "INSERT INTO things (name) VALUES ($1)"};
const rr::db::Statement kRenameAll{"db_result_rename", "UPDATE things SET name = name || $1"};
const rr::db::Statement kRaise{"db_result_raise", "SELECT raise_sqlstate($1)"};
const rr::db::Statement kSleep{"db_result_sleep", "SELECT pg_sleep($1::float8)"};
const rr::db::Statement kBackend{"db_result_backend", "SELECT pg_backend_pid()"};

struct ResultFixture {
  rr::test::TestDatabase db{/*migrated=*/false};
  rr::db::Connection conn{db.url()};
  rr::db::SessionStatements statements{conn, db.statement_mode()};

  ResultFixture() {
    pqxx::work tx(db.conn());
    tx.exec(R"sql(
      CREATE TABLE things (name text PRIMARY KEY);
      CREATE FUNCTION raise_sqlstate(state text) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'raised %', state USING ERRCODE = state;
      END $$;
    )sql");
    tx.commit();
  }

  // Runs `statement` in a transaction of its own on `conn` and commits.
  template <typename... Args>
  rr::db::Result run(const rr::db::Statement& statement, const Args&... args) {
    rr::db::Transaction tx(conn, 0ms);
    auto rows = statements.exec(tx, statement, args...);
    tx.commit();
    return rows;
  }

  // The SQLSTATE `statement` fails with, "" when it throws no pqxx::sql_error.
  template <typename... Args>
  std::string sqlstate_of(const rr::db::Statement& statement, const Args&... args) {
    try {
      run(statement, args...);
    } catch (const pqxx::sql_error& e) {
      return e.sqlstate();
    }
    return "";
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(db_result, ResultFixture)

BOOST_AUTO_TEST_CASE(the_connection_lends_libpqxx_the_session_it_opened) {
  PGconn* session = conn.session();
  BOOST_REQUIRE(session != nullptr);
  BOOST_TEST(PQstatus(session) == CONNECTION_OK);
  BOOST_TEST(PQbackendPID(session) == conn.backendpid());
  BOOST_TEST(PQsocket(session) == conn.sock());
  // A transaction of libpqxx's and a statement of ours see one server session.
  rr::db::Transaction tx(conn, 0ms);
  auto ours = statements.exec(tx, kBackend)[0][0].as<int>();
  auto theirs = tx.exec("SELECT pg_backend_pid()")[0][0].as<int>();
  tx.commit();
  BOOST_TEST(ours == theirs);
}

BOOST_AUTO_TEST_CASE(a_reopened_connection_hands_out_its_new_session_and_prepares_again) {
  run(kNumbers, 1);
  PGconn* before = conn.session();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  conn.deactivate();
  BOOST_TEST(conn.session() == nullptr);  // closed by our policy, not left dangling
  conn.activate();
#pragma GCC diagnostic pop
  BOOST_REQUIRE(conn.session() != nullptr);
  BOOST_TEST(PQbackendPID(conn.session()) == conn.backendpid());
  // The new server session has nothing prepared: prepared mode must prepare again, not fail
  // with "prepared statement does not exist".
  BOOST_TEST(run(kNumbers, 2).size() == 2);
  BOOST_TEST_MESSAGE("session before " << before << ", after " << conn.session());
}

BOOST_AUTO_TEST_CASE(fields_convert_to_the_types_the_product_reads) {
  auto rows = run(kValues, std::int64_t{9007199254740993}, -7, true, false, 0.25, std::string("é, 'quoted'"));
  BOOST_REQUIRE(rows.size() == 1);
  BOOST_TEST(rows.columns() == 7);
  auto row = rows[0];
  BOOST_TEST(row[0].as<std::int64_t>() == 9007199254740993);
  BOOST_TEST(row[1].as<int>() == -7);
  BOOST_TEST(row[2].as<bool>() == true);
  BOOST_TEST(row[3].as<bool>() == false);
  BOOST_TEST(row[4].as<double>() == 0.25);
  BOOST_TEST(row[5].as<std::string>() == "é, 'quoted'");
  BOOST_TEST(row["words"].as<std::string>() == "é, 'quoted'");
  BOOST_TEST(row[std::string("big")].as<std::int64_t>() == 9007199254740993);
  BOOST_TEST(std::string(row[1].name()) == "small");
  // Text a number cannot be read from is an error, not a zero.
  BOOST_CHECK_THROW(row[5].as<std::int64_t>(), rr::db::FieldError);
  BOOST_CHECK_THROW(row[5].as<bool>(), rr::db::FieldError);
  BOOST_CHECK_THROW(row[0].as<int>(), rr::db::FieldError);  // out of an int's range
}

BOOST_AUTO_TEST_CASE(nulls_read_as_nullopt_or_a_default_and_never_as_a_value) {
  auto rows = run(kValues, 1, 2, true, std::optional<bool>{}, 1.5, std::optional<std::string>{});
  auto row = rows[0];
  BOOST_TEST(row[3].is_null());
  BOOST_TEST(row[5].is_null());
  BOOST_TEST(row["nothing"].is_null());
  BOOST_TEST(!row[0].is_null());
  BOOST_TEST(!row[5].as<std::optional<std::string>>().has_value());
  BOOST_TEST(row[0].as<std::optional<std::int64_t>>().value_or(0) == 1);
  BOOST_TEST(row[5].as<std::string>("none") == "none");
  BOOST_TEST(row[1].as<int>(99) == 2);
  BOOST_CHECK_THROW(row[5].as<std::string>(), rr::db::FieldError);
  BOOST_CHECK_THROW(row[3].as<bool>(), rr::db::FieldError);
}

BOOST_AUTO_TEST_CASE(positions_and_names_outside_the_result_are_errors) {
  auto rows = run(kNumbers, 2);
  BOOST_TEST(rows.size() == 2);
  BOOST_CHECK_THROW(rows[2], rr::db::FieldError);
  BOOST_CHECK_THROW(rows[-1], rr::db::FieldError);
  BOOST_CHECK_THROW(rows[0][1], rr::db::FieldError);
  BOOST_CHECK_THROW(rows[0]["missing"], rr::db::FieldError);
  auto none = run(kNumbers, 0);
  BOOST_TEST(none.empty());
  BOOST_TEST(none.columns() == 1);  // a tuples result without rows still has its columns
  rr::db::Result unassigned;
  BOOST_TEST(unassigned.empty());
}

BOOST_AUTO_TEST_CASE(rows_iterate_and_outlive_the_result_they_came_from) {
  std::vector<std::int64_t> seen;
  for (const auto& row : run(kNumbers, 3)) {
    for (const auto& field : row) seen.push_back(field.as<std::int64_t>());
  }
  BOOST_TEST((seen == std::vector<std::int64_t>{1, 2, 3}));
  // A row kept past its Result keeps the PGresult alive (AddressSanitizer checks the reading).
  std::optional<rr::db::Row> kept;
  { kept = run(kNumbers, 2)[1]; }
  BOOST_TEST((*kept)[0].as<int>() == 2);
  BOOST_TEST(std::string((*kept)[0].c_str()) == "2");
  BOOST_TEST((*kept)[0].view() == "2");
}

BOOST_AUTO_TEST_CASE(bytes_travel_as_bytea_and_commands_count_their_rows) {
  const std::string raw("\x00\xff\x10 ok", 6);
  auto rows = run(kBytesMatch, rr::db::bytes(raw), std::string("00ff10206f6b"));
  BOOST_TEST(rows[0][0].as<bool>() == true);
  BOOST_TEST(rows[0][1].as<int>() == 6);
  BOOST_TEST(run(kInsertThing, "a").affected_rows() == 1u);
  BOOST_TEST(run(kInsertThing, "b").affected_rows() == 1u);
  BOOST_TEST(run(kRenameAll, "!").affected_rows() == 2u);
  BOOST_TEST(run(kNumbers, 4).affected_rows() == 4u);  // a SELECT counts its rows
}

BOOST_AUTO_TEST_CASE(errors_carry_their_sqlstate_as_the_libpqxx_types_callers_classify) {
  run(kInsertThing, "once");
  try {
    run(kInsertThing, "once");
    BOOST_FAIL("a duplicate key was accepted");
  } catch (const pqxx::unique_violation& e) {
    BOOST_TEST(e.sqlstate() == "23505");
    BOOST_TEST(!rr::db::outage_message(e).has_value());  // a constraint is no outage
  }
  BOOST_CHECK_THROW(run(kRaise, "40001"), pqxx::serialization_failure);
  BOOST_CHECK_THROW(run(kRaise, "40P01"), pqxx::deadlock_detected);
  BOOST_TEST(sqlstate_of(kRaise, "RR001") == "RR001");
  BOOST_TEST(sqlstate_of(kRaise, "22012") == "22012");
  // The failed transaction rolled back; the session is usable at once.
  BOOST_TEST(run(kNumbers, 1).size() == 1);
}

BOOST_AUTO_TEST_CASE(failover_states_and_timeouts_are_outages) {
  for (const char* state : {"25006", "57P01", "57P02", "57P03"}) {
    try {
      run(kRaise, state);
      BOOST_FAIL("raise_sqlstate did not raise");
    } catch (const pqxx::sql_error& e) {
      BOOST_TEST(e.sqlstate() == state);
      auto message = rr::db::outage_message(e);
      BOOST_TEST(message.has_value(), state << " is not an outage");
      BOOST_TEST(message.value_or("").find("failing over") != std::string::npos);
    }
  }
  try {
    rr::db::Transaction tx(conn, 100ms);
    statements.exec(tx, kSleep, 5.0);
    BOOST_FAIL("pg_sleep(5) was not cancelled");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(e.sqlstate() == "57014");
    BOOST_TEST(rr::db::is_statement_timeout(e));
    BOOST_TEST(rr::db::outage_message(e).value_or("") == "The database is busy; retry shortly.");
  }
}

BOOST_AUTO_TEST_CASE(a_session_ended_by_the_server_is_a_broken_connection_and_reads_closed) {
  // Straight to PostgreSQL, whichever way the suite runs: through PgBouncer the client session
  // would outlive the server's.
  rr::db::Connection direct(db.direct_url());
  rr::db::SessionStatements direct_statements(direct, rr::db::StatementMode::prepared);
  auto run_direct = [&] {
    rr::db::Transaction tx(direct, 0ms);
    auto pid = direct_statements.exec(tx, kBackend)[0][0].as<int>();
    tx.commit();
    return pid;
  };
  const int server_pid = run_direct();
  {
    pqxx::connection admin(db.direct_url());
    pqxx::nontransaction(admin).exec("SELECT pg_terminate_backend(" + std::to_string(server_pid) + ")");
  }
  bool broken = false;
  // The server ends the session as soon as it handles the signal; until then a statement may pass.
  for (int attempt = 0; attempt < 50 && !broken; ++attempt) {
    try {
      run_direct();
      std::this_thread::sleep_for(100ms);
    } catch (const pqxx::broken_connection& e) {
      broken = true;
      BOOST_TEST(rr::db::outage_message(e).value_or("") == "The database is unavailable; retry shortly.");
    }
  }
  BOOST_REQUIRE(broken);
  // The session reads closed (a pool drops it), and a one-trip call is refused without sending.
  BOOST_TEST(PQstatus(direct.session()) == CONNECTION_BAD);
  BOOST_TEST(!direct.is_open());
  BOOST_CHECK_THROW(rr::db::run_one_trip(direct, rr::db::call("pg_backend_pid"), 0ms), pqxx::broken_connection);
}

BOOST_AUTO_TEST_CASE(prepared_mode_prepares_each_statement_once_and_unnamed_mode_never) {
  for (int n = 1; n <= 3; ++n) run(kNumbers, n);
  run(kValues, 1, 2, true, false, 0.5, "x");
  pqxx::nontransaction probe(conn);
  auto count = [&] {
    return probe.exec("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'db\\_result\\_%'")[0][0].as<int>();
  };
  if (db.statement_mode() == rr::db::StatementMode::prepared) {
    BOOST_TEST(count() == 2);
  } else {
    BOOST_TEST(count() == 0);
  }
}

BOOST_AUTO_TEST_CASE(a_statement_belongs_to_its_own_sessions_transactions) {
  rr::db::Connection other(db.url());
  rr::db::Transaction tx(other, 0ms);
  BOOST_CHECK_THROW(statements.exec(tx, kNumbers, 1), std::logic_error);
}

BOOST_AUTO_TEST_SUITE_END()
