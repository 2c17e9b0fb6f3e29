// db::Transaction: every statement bounded by DATABASE_STATEMENT_TIMEOUT, the bound set per
// transaction (so it holds through a transaction-pooling PgBouncer too: this suite also runs
// behind one) and gone with it.
#include <boost/test/unit_test.hpp>
#include <chrono>

#include "common/db/connection_pool.hpp"
#include "common/db/transaction.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;

namespace {

struct TransactionFixture {
  rr::test::TestDatabase db{/*migrated=*/false};
  pqxx::connection conn{db.url()};

  std::string show_statement_timeout(std::chrono::milliseconds bound) {
    rr::db::Transaction tx(conn, bound);
    auto value = tx.exec("SHOW statement_timeout")[0][0].as<std::string>();
    tx.commit();
    return value;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(bounded_transactions, TransactionFixture)

BOOST_AUTO_TEST_CASE(a_statement_past_the_bound_is_cancelled_as_a_statement_timeout) {
  auto started = std::chrono::steady_clock::now();
  try {
    rr::db::Transaction tx(conn, 200ms);
    tx.exec("SELECT pg_sleep(5)");
    BOOST_FAIL("pg_sleep(5) was not cancelled");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(rr::db::is_statement_timeout(e), e.what());
  }
  BOOST_TEST((std::chrono::steady_clock::now() - started < 4s));
}

BOOST_AUTO_TEST_CASE(the_bound_is_set_inside_the_transaction_and_gone_after_it) {
  BOOST_TEST(show_statement_timeout(1500ms) == "1500ms");
  // The same client session afterwards (through PgBouncer: whatever server session it gets).
  pqxx::nontransaction plain(conn);
  BOOST_TEST(plain.exec("SHOW statement_timeout")[0][0].as<std::string>() == "0");
}

BOOST_AUTO_TEST_CASE(zero_means_no_bound) {
  BOOST_TEST(show_statement_timeout(0ms) == "0");
  rr::db::Transaction tx(conn, 0ms);
  BOOST_CHECK_NO_THROW(tx.exec("SELECT pg_sleep(0.3)"));
}

BOOST_AUTO_TEST_CASE(other_errors_are_not_taken_for_timeouts) {
  try {
    rr::db::Transaction tx(conn, 1s);
    tx.exec("SELECT 1/0");
    BOOST_FAIL("division by zero did not fail");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(!rr::db::is_statement_timeout(e), e.what());
  }
}

BOOST_AUTO_TEST_CASE(pooled_sessions_bound_their_transactions_with_the_pool_setting) {
  rr::db::ConnectionPool pool(db.url(), rr::db::SessionOptions{db.statement_mode(), 250ms}, 1, 5s);
  auto lease = pool.acquire();
  rr::db::Transaction tx(lease.conn(), lease.statement_timeout());
  BOOST_TEST(tx.exec("SHOW statement_timeout")[0][0].as<std::string>() == "250ms");
}

// In prepared-statement mode the session is the pool's alone: it carries the bound from its start,
// and a transaction sets nothing itself (one statement less per phase). Without prepared
// statements (behind a transaction-pooling PgBouncer) the session carries nothing of ours, and
// every transaction sets the bound. This suite also runs behind PgBouncer, in the second mode.
BOOST_AUTO_TEST_CASE(the_bound_lives_in_the_session_only_when_the_session_is_ours_alone) {
  auto mode = db.statement_mode();
  rr::db::ConnectionPool pool(db.url(), rr::db::SessionOptions{mode, 250ms}, 1, 5s);
  auto lease = pool.acquire();
  pqxx::nontransaction outside(lease.conn());
  auto session_bound = outside.exec("SHOW statement_timeout")[0][0].as<std::string>();
  outside.commit();
  if (mode == rr::db::StatementMode::prepared) {
    BOOST_TEST(session_bound == "250ms");
    BOOST_TEST(lease.statement_timeout().count() == 0);
    // Bounded all the same: the session's bound cancels a transaction's statement.
    rr::db::Transaction tx(lease.conn(), lease.statement_timeout());
    try {
      tx.exec("SELECT pg_sleep(2)");
      BOOST_FAIL("a statement past the session's bound was not cancelled");
    } catch (const pqxx::sql_error& e) {
      BOOST_TEST(rr::db::is_statement_timeout(e), e.what());
    }
  } else {
    BOOST_TEST(session_bound != "250ms");
    BOOST_TEST(lease.statement_timeout() == 250ms);
  }
}

BOOST_AUTO_TEST_CASE(a_pool_without_a_bound_sets_none_anywhere) {
  rr::db::ConnectionPool pool(db.url(), rr::db::SessionOptions{db.statement_mode(), 0ms}, 1, 5s);
  auto lease = pool.acquire();
  BOOST_TEST(lease.statement_timeout().count() == 0);
  pqxx::nontransaction outside(lease.conn());
  BOOST_TEST(outside.exec("SHOW statement_timeout")[0][0].as<std::string>() == "0");
}

BOOST_AUTO_TEST_SUITE_END()
