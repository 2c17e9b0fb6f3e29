// db::run_one_trip: a function call sent as "SET LOCAL statement_timeout = N; SELECT * FROM f(...)"
// in one simple query, run as one implicit transaction, its arguments quoted literals. The suite
// also runs through a transaction-pooling PgBouncer.
#include <boost/test/unit_test.hpp>
#include <chrono>

#include "common/db/connection.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/db/transaction.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;

namespace {

struct OneTripFixture {
  rr::test::TestDatabase db{/*migrated=*/false};
  rr::db::Connection conn{db.url()};

  OneTripFixture() {
    pqxx::work tx(db.conn());
    tx.exec(R"sql(
      CREATE TABLE written (v text);
      CREATE FUNCTION echo(a text, b text, c bigint, d boolean)
        RETURNS TABLE (a text, b text, c bigint, d boolean, timeout text)
        LANGUAGE sql AS $$ SELECT a, b, c, d, current_setting('statement_timeout') $$;
      CREATE FUNCTION write_then_raise(v text, sqlstate text) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO written VALUES (v);
        IF sqlstate IS NOT NULL THEN
          RAISE EXCEPTION 'raised after writing %', v USING ERRCODE = sqlstate;
        END IF;
      END $$;
      CREATE FUNCTION sleep_for(seconds float8) RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(seconds) $$;
    )sql");
    tx.commit();
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(one_trip_calls, OneTripFixture)

BOOST_AUTO_TEST_CASE(arguments_arrive_exactly_as_given_whatever_they_hold) {
  const std::string nasty = "it's a \\'quote'' \\\\ ; DROP TABLE written; -- \xc3\xa9\xe2\x82\xac";
  auto rows = rr::db::run_one_trip(conn, rr::db::call("echo", nasty, std::optional<std::string>{}, -42, true), 1500ms);
  BOOST_REQUIRE(rows.size() == 1);
  BOOST_TEST(rows[0][0].as<std::string>() == nasty);
  BOOST_TEST(rows[0][1].is_null());
  BOOST_TEST(rows[0][2].as<std::int64_t>() == -42);
  BOOST_TEST(rows[0][3].as<bool>() == true);
  BOOST_TEST(db.scalar("SELECT count(*) FROM written") == "0");  // the table is still there
}

BOOST_AUTO_TEST_CASE(the_bound_holds_for_the_call_and_is_gone_after_it) {
  auto rows = rr::db::run_one_trip(conn, rr::db::call("echo", "a", "b", 1, false), 1500ms);
  BOOST_TEST(rows[0][4].as<std::string>() == "1500ms");
  // The same client session afterwards (through PgBouncer: whatever server session it gets).
  pqxx::nontransaction plain(conn);
  BOOST_TEST(plain.exec("SHOW statement_timeout")[0][0].as<std::string>() == "0");
}

BOOST_AUTO_TEST_CASE(a_call_past_the_bound_is_cancelled_as_a_statement_timeout) {
  auto started = std::chrono::steady_clock::now();
  try {
    rr::db::run_one_trip(conn, rr::db::call("sleep_for", 5), 200ms);
    BOOST_FAIL("a 5 s call was not cancelled");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(rr::db::is_statement_timeout(e), e.what());
  }
  BOOST_TEST((std::chrono::steady_clock::now() - started < 4s));
}

BOOST_AUTO_TEST_CASE(a_raise_after_a_write_rolls_the_whole_call_back_and_names_its_sqlstate) {
  try {
    rr::db::run_one_trip(conn, rr::db::call("write_then_raise", "lost", rr::db::kLockTakenOver), 1s);
    BOOST_FAIL("the call did not raise");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(rr::db::has_sqlstate(e, rr::db::kLockTakenOver), e.what());
    BOOST_TEST(!rr::db::has_sqlstate(e, rr::db::kMissingRow));
  }
  BOOST_TEST(db.scalar("SELECT count(*) FROM written") == "0");
  // The connection is usable at once: the implicit transaction ended with the error.
  rr::db::run_one_trip(conn, rr::db::call("write_then_raise", "kept", std::optional<std::string>{}), 1s);
  BOOST_TEST(db.scalar("SELECT string_agg(v, ',') FROM written") == "kept");
}

BOOST_AUTO_TEST_CASE(the_query_is_one_round_trip_with_the_bound_first) {
  auto query = rr::db::one_trip_query(rr::db::call("f", "x", 1, std::optional<std::string>{}), 250ms,
                                      [](std::string& out, const std::string& v) { out += v; });
  BOOST_TEST(query == "SET LOCAL statement_timeout = 250; SELECT * FROM f('x', '1', NULL)");
  BOOST_TEST(rr::db::one_trip_query(rr::db::call("g"), 0ms, [](std::string& out, const std::string& v) { out += v; }) ==
             "SELECT * FROM g()");
}

BOOST_AUTO_TEST_CASE(a_long_argument_of_quotes_arrives_whole) {
  // Every byte doubled by the escaping: the worst case the query's storage is reserved for.
  std::string quotes(20000, '\'');
  quotes += "\\end";
  auto rows = rr::db::run_one_trip(conn, rr::db::call("echo", quotes, "", 0, false), 1500ms);
  BOOST_TEST(rows[0][0].as<std::string>() == quotes);
  BOOST_TEST(rows[0][1].as<std::string>() == "");
}

BOOST_AUTO_TEST_CASE(an_argument_invalid_in_the_session_encoding_is_refused_before_anything_is_sent) {
  pqxx::nontransaction(conn).exec("SET client_encoding = 'UTF8'");
  PGconn* pg = conn.session();
  BOOST_REQUIRE(pg != nullptr);
  std::string query = "SELECT ";
  BOOST_CHECK_THROW(rr::db::append_escaped(pg, query, "ok \xc3("), pqxx::argument_error);
  BOOST_TEST(query == "SELECT ");  // nothing of the refused value is left behind
  rr::db::append_escaped(pg, query, "it's");
  BOOST_TEST(query == "SELECT it''s");

  BOOST_CHECK_THROW(
      rr::db::run_one_trip(conn, rr::db::call("write_then_raise", "bad \xff", std::optional<std::string>{}), 1s),
      pqxx::argument_error);
  BOOST_TEST(db.scalar("SELECT count(*) FROM written") == "0");
  rr::db::run_one_trip(conn, rr::db::call("write_then_raise", "after", std::optional<std::string>{}), 1s);
  BOOST_TEST(db.scalar("SELECT string_agg(v, ',') FROM written") == "after");
}

BOOST_AUTO_TEST_SUITE_END()
