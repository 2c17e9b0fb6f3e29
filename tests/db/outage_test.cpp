// db::outage_message: which database failures a client should simply retry (503) and which not.
#include <boost/test/unit_test.hpp>
#include <pqxx/pqxx>
#include <stdexcept>

#include "common/db/connection_pool.hpp"
#include "common/db/outage.hpp"

BOOST_AUTO_TEST_SUITE(database_outages)

BOOST_AUTO_TEST_CASE(a_broken_connection_is_an_outage) {
  auto message = rr::db::outage_message(pqxx::broken_connection("server closed the connection unexpectedly"));
  BOOST_REQUIRE(message);
  BOOST_TEST(message->find("unavailable") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_commit_of_unknown_outcome_is_an_outage_to_retry_with_the_same_key) {
  auto message = rr::db::outage_message(pqxx::in_doubt_error("Connection lost while committing"));
  BOOST_REQUIRE(message);
  BOOST_TEST(message->find("same Idempotency-Key") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_statement_timeout_is_an_outage) {
  auto message = rr::db::outage_message(
      pqxx::sql_error("canceling statement due to statement timeout", "SELECT pg_sleep(5)", "57014"));
  BOOST_REQUIRE(message);
  BOOST_TEST(message->find("busy") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_failover_is_an_outage) {
  // A demoted leader still connected through the balancer for a moment, then its shutdown.
  for (const char* state : {"25006", "57P01", "57P02", "57P03"}) {
    auto message =
        rr::db::outage_message(pqxx::sql_error("cannot execute INSERT in a read-only transaction", "INSERT", state));
    BOOST_REQUIRE_MESSAGE(message, state);
    BOOST_TEST(message->find("failing over") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(the_rest_of_class_57_is_an_outage_too) {
  for (const char* state : {"57000", "57P04"}) {
    BOOST_TEST_CONTEXT(state) {
      BOOST_TEST(rr::db::outage_message(pqxx::sql_error("operator intervention", "", state)).has_value());
    }
  }
}

BOOST_AUTO_TEST_CASE(an_exhausted_pool_is_an_outage) {
  auto message =
      rr::db::outage_message(rr::db::PoolExhausted("no database connection free within the checkout timeout"));
  BOOST_REQUIRE(message);
  BOOST_TEST(message->find("busy") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_server_out_of_resources_is_an_outage) {
  for (const char* state : {"53000", "53100", "53200", "53300"}) {
    BOOST_TEST_CONTEXT(state) {
      auto message = rr::db::outage_message(pqxx::sql_error("out of memory", "SELECT 1", state));
      BOOST_REQUIRE(message);
      BOOST_TEST(message->find("out of resources") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(everything_else_is_not) {
  BOOST_TEST(!rr::db::outage_message(pqxx::sql_error("duplicate key", "INSERT", "23505")));
  BOOST_TEST(!rr::db::outage_message(pqxx::unique_violation("duplicate key", "INSERT", "23505")));
  BOOST_TEST(!rr::db::outage_message(std::runtime_error("a bug")));
  BOOST_TEST(!rr::db::outage_message(pqxx::sql_error("no such function", "SELECT f()", "42883")));
}

BOOST_AUTO_TEST_CASE(a_serialization_failure_or_a_deadlock_is_a_conflict_to_retry) {
  BOOST_TEST(rr::db::conflict_message(pqxx::serialization_failure("could not serialize access")).has_value());
  BOOST_TEST(rr::db::conflict_message(pqxx::deadlock_detected("deadlock detected")).has_value());
  BOOST_TEST(!rr::db::outage_message(pqxx::deadlock_detected("deadlock detected")));
  // A commit of unknown outcome is an outage (its retry finds out what happened), not a conflict.
  BOOST_TEST(!rr::db::conflict_message(pqxx::statement_completion_unknown("unknown")));
  BOOST_TEST(!rr::db::conflict_message(pqxx::unique_violation("duplicate key", "INSERT", "23505")));
  BOOST_TEST(!rr::db::conflict_message(std::runtime_error("a bug")));
}

BOOST_AUTO_TEST_SUITE_END()
