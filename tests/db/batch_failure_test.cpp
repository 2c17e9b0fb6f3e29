// db::classify_batch_failure: which failures of a coalesced batch rerun its requests one by one
// (a row refused), which reach every request once (an outage, a conflict) and which are bugs.
#include <boost/test/unit_test.hpp>
#include <pqxx/pqxx>
#include <stdexcept>

#include "common/db/batch_failure.hpp"
#include "common/db/connection_pool.hpp"

using rr::db::BatchFailure;
using rr::db::classify_batch_failure;

BOOST_AUTO_TEST_SUITE(batch_failures)

BOOST_AUTO_TEST_CASE(a_row_refused_for_its_data_or_a_constraint_is_a_member_refusal) {
  BOOST_TEST((classify_batch_failure(pqxx::unique_violation("duplicate key", "SELECT", "23505")) ==
              BatchFailure::member_refused));
  BOOST_TEST(
      (classify_batch_failure(pqxx::check_violation("check", "SELECT", "23514")) == BatchFailure::member_refused));
  BOOST_TEST((classify_batch_failure(pqxx::data_exception("invalid input syntax", "SELECT", "22P02")) ==
              BatchFailure::member_refused));
}

BOOST_AUTO_TEST_CASE(a_failing_database_or_pool_is_an_outage) {
  BOOST_TEST((classify_batch_failure(pqxx::broken_connection("server closed the connection")) == BatchFailure::outage));
  BOOST_TEST((classify_batch_failure(pqxx::in_doubt_error("lost while committing")) == BatchFailure::outage));
  BOOST_TEST((classify_batch_failure(pqxx::statement_completion_unknown("unknown")) == BatchFailure::outage));
  BOOST_TEST((classify_batch_failure(rr::db::PoolExhausted("no connection")) == BatchFailure::outage));
  for (const char* state : {"57014", "57P01", "57P03", "53300", "53200", "25006"}) {
    BOOST_TEST_CONTEXT(state) {
      BOOST_TEST((classify_batch_failure(pqxx::sql_error("outage", "SELECT", state)) == BatchFailure::outage));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_serialization_failure_or_deadlock_is_a_conflict_for_the_whole_batch) {
  BOOST_TEST((classify_batch_failure(pqxx::serialization_failure("could not serialize")) == BatchFailure::conflict));
  BOOST_TEST((classify_batch_failure(pqxx::deadlock_detected("deadlock detected")) == BatchFailure::conflict));
}

BOOST_AUTO_TEST_CASE(anything_else_is_a_programming_error) {
  BOOST_TEST((classify_batch_failure(pqxx::undefined_function("no such function", "SELECT", "42883")) ==
              BatchFailure::programming_error));
  BOOST_TEST((classify_batch_failure(pqxx::sql_error("wrong number of arguments", "SELECT", "42P13")) ==
              BatchFailure::programming_error));
  BOOST_TEST(
      (classify_batch_failure(pqxx::plpgsql_raise("raised", "SELECT", "P0001")) == BatchFailure::programming_error));
  BOOST_TEST((classify_batch_failure(std::logic_error("calls of one batch differ in arity")) ==
              BatchFailure::programming_error));
  BOOST_TEST((classify_batch_failure(pqxx::conversion_error("NULL ordinal")) == BatchFailure::programming_error));
}

BOOST_AUTO_TEST_SUITE_END()
