// Constraints that live in the schema: key length and alphabet, uniqueness per user, verbatim bodies.
#include <boost/test/unit_test.hpp>

#include <array>
#include <string_view>

#include "common/idempotency/key_statements.hpp"
#include "common/rides/cancel_statements.hpp"
#include "common/rides/ride_response.hpp"
#include "common/rides/ride_statements.hpp"
#include "support/test_database.hpp"

using rr::test::TestDatabase;

namespace {

// The resumed-key finish of binaries before one path finished every key: this one no longer sends
// it, but it stays installed for them during a rolling upgrade, so it still answers as they expect.
constexpr const char* kRecordChargeAndStageReceiptV2 =
    "SELECT * FROM rides_record_charge_and_stage_receipt_v2($1, $2, $3, $4, $5)";

struct SchemaFixture {
  TestDatabase db;
  std::int64_t alice = 0;
  std::int64_t bob = 0;

  SchemaFixture() {
    pqxx::work tx(db.conn());
    alice =
        tx.exec(
              "INSERT INTO users (email, stripe_customer_id) VALUES ('alice@example.com', 'cus_a') RETURNING id")[0][0]
            .as<std::int64_t>();
    bob =
        tx.exec("INSERT INTO users (email, stripe_customer_id) VALUES ('bob@example.com', 'cus_b') RETURNING id")[0][0]
            .as<std::int64_t>();
    tx.commit();
  }

  // Inserts a key row; true when the database accepted it.
  bool insert_key(std::int64_t user, const std::string& key) {
    try {
      pqxx::work tx(db.conn());
      tx.exec_params(
          "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
          "recovery_point, user_id) VALUES ($1, 'POST', '{}', '/rides', 'started', $2)",
          key, user);
      tx.commit();
      return true;
    } catch (const pqxx::integrity_constraint_violation&) {
      return false;
    } catch (const pqxx::data_exception&) {
      return false;
    }
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(schema, SchemaFixture)

BOOST_AUTO_TEST_CASE(moving_and_finishing_a_key_touches_no_index) {
  // PostgreSQL makes an UPDATE heap-only (no index writes) only if no indexed or predicate column
  // changes; a phase moves recovery_point and last_run_at, and the finish also sets the response
  // and drops the lock, so no index may mention any of them (sql/012).
  std::string indexes = db.scalar(
      "SELECT string_agg(pg_get_indexdef(indexrelid), ' ; ') FROM pg_index "
      "WHERE indrelid = 'idempotency_keys'::regclass");
  for (const char* column :
       {"recovery_point", "last_run_at", "response_code", "response_body", "locked_at", "lock_token"}) {
    BOOST_TEST(indexes.find(column) == std::string::npos, column << " in " << indexes);
  }
  // The completer's keys that failed an attempt have their own small index; the finish leaves
  // attempts alone.
  BOOST_TEST(indexes.find("idempotency_keys_retried") != std::string::npos, indexes);
  // And the page keeps room for those versions.
  BOOST_TEST(
      db.scalar("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'idempotency_keys'::regclass") ==
      "fillfactor=50");
  // A phase move and the finish in one transaction are heap-only, as counted by the transaction's
  // own statistics; so is the charge recorded on the ride.
  pqxx::work tx(db.conn());
  auto id =
      tx.exec_params1(
            "INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, request_params,"
            " recovery_point, locked_at, lock_token) VALUES ($1, 'hot-update-key-00000001', 'POST', '/rides',"
            " '{}', 'started', now(), gen_random_uuid()) RETURNING id",
            alice)[0]
          .as<std::int64_t>();
  tx.exec_params(
      "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id) "
      "VALUES ($1, 1, 2, 3, 4, $2)",
      id, alice);
  tx.exec_params("UPDATE idempotency_keys SET recovery_point = 'ride_created', last_run_at = now() WHERE id = $1", id);
  tx.exec_params(
      "UPDATE idempotency_keys SET recovery_point = 'finished', response_code = 201, response_body = '{}',"
      " locked_at = NULL, lock_token = NULL, last_run_at = now() WHERE id = $1",
      id);
  tx.exec_params("UPDATE rides SET stripe_charge_id = 'ch_hot_update' WHERE idempotency_key_id = $1", id);
  BOOST_TEST(tx.exec("SELECT pg_stat_get_xact_tuples_hot_updated('idempotency_keys'::regclass)")[0][0].as<int>() == 2);
  BOOST_TEST(tx.exec("SELECT pg_stat_get_xact_tuples_hot_updated('rides'::regclass)")[0][0].as<int>() == 1);
}

BOOST_AUTO_TEST_CASE(key_length_bounds_match_the_api) {
  BOOST_TEST(!insert_key(alice, std::string(19, 'k')));
  BOOST_TEST(insert_key(alice, std::string(20, 'k')));
  BOOST_TEST(insert_key(alice, std::string(255, 'x')));
  BOOST_TEST(!insert_key(alice, std::string(256, 'y')));
}

BOOST_AUTO_TEST_CASE(key_must_be_printable_ascii) {
  BOOST_TEST(!insert_key(alice, "key-with-a-tab\there-000"));
  BOOST_TEST(!insert_key(alice, "key-with-unicode-\xc3\xa9-0000"));
  BOOST_TEST(insert_key(alice, "key with spaces and ~!@#$%^&*()"));
}

BOOST_AUTO_TEST_CASE(key_is_unique_per_user_not_globally) {
  std::string key = "shared-key-value-0000001";
  BOOST_TEST(insert_key(alice, key));
  BOOST_TEST(!insert_key(alice, key));
  BOOST_TEST(insert_key(bob, key));
}

BOOST_AUTO_TEST_CASE(each_key_gets_its_own_payment_idempotency_key) {
  BOOST_REQUIRE(insert_key(alice, "first-key-000000000000"));
  BOOST_REQUIRE(insert_key(alice, "second-key-00000000000"));
  BOOST_TEST(db.scalar("SELECT count(DISTINCT payment_idempotency_key) FROM idempotency_keys") == "2");
  BOOST_TEST(db.scalar("SELECT bool_and(payment_idempotency_key LIKE 'rr-%') FROM idempotency_keys") == "t");
}

BOOST_AUTO_TEST_CASE(a_new_keys_insert_has_no_unique_index_besides_its_conflict_target) {
  // Two first requests with one key race past ON CONFLICT (user_id, idempotency_key)'s pre-check;
  // a second unique index over what the key determines (its derived payment_idempotency_key) would
  // then fail the loser with a unique violation instead of letting it do nothing.
  BOOST_TEST(db.scalar("SELECT string_agg(pg_get_indexdef(indexrelid), ' ; ' ORDER BY indexrelid) FROM pg_index "
                       "WHERE indrelid = 'idempotency_keys'::regclass AND indisunique AND NOT indisprimary") ==
             "CREATE UNIQUE INDEX idempotency_keys_user_id_idempotency_key ON public.idempotency_keys USING btree "
             "(user_id, idempotency_key)");
}

BOOST_AUTO_TEST_CASE(an_unfinished_key_cannot_carry_a_response_code) {
  // The completer finds unfinished keys by response_code IS NULL: a code on one would hide it.
  BOOST_REQUIRE(insert_key(alice, "half-done-0000000000000"));
  BOOST_CHECK_THROW(
      {
        pqxx::work tx(db.conn());
        tx.exec("UPDATE idempotency_keys SET response_code = 201");
        tx.commit();
      },
      pqxx::check_violation);
}

BOOST_AUTO_TEST_CASE(finished_requires_a_stored_response) {
  BOOST_REQUIRE(insert_key(alice, "finish-me-0000000000000"));
  BOOST_CHECK_THROW(
      {
        pqxx::work tx(db.conn());
        tx.exec("UPDATE idempotency_keys SET recovery_point = 'finished'");
        tx.commit();
      },
      pqxx::check_violation);
}

BOOST_AUTO_TEST_CASE(response_body_is_kept_byte_for_byte) {
  BOOST_REQUIRE(insert_key(alice, "verbatim-body-000000000"));
  std::string body = "{\"z\":1,  \"a\":{\"b\":2.50}}";
  {
    pqxx::work tx(db.conn());
    tx.exec_params("UPDATE idempotency_keys SET recovery_point = 'finished', response_code = 201, response_body = $1",
                   body);
    tx.commit();
  }
  BOOST_TEST(db.scalar("SELECT response_body FROM idempotency_keys") == body);
}

BOOST_AUTO_TEST_CASE(staged_jobs_get_distinct_24_hex_jids_with_no_index) {
  pqxx::work tx(db.conn());
  tx.exec("INSERT INTO staged_jobs (job_name, job_args) SELECT 'send_ride_receipt', '[1]' FROM generate_series(1, 3)");
  tx.commit();
  auto jids = "SELECT staged_jobs_jid(id, jid) FROM staged_jobs";
  BOOST_TEST(db.scalar(std::string("SELECT bool_and(j ~ '^[0-9a-f]{24}$') FROM (") + jids + ") s(j)") == "t");
  BOOST_TEST(db.scalar(std::string("SELECT count(DISTINCT j) FROM (") + jids + ") s(j)") == "3");
  // The same on every read (a re-push carries the jid of the first push).
  BOOST_TEST(db.scalar(std::string("SELECT string_agg(j, ',' ORDER BY j) FROM (") + jids + ") s(j)") ==
             db.scalar(std::string("SELECT string_agg(j, ',' ORDER BY j) FROM (") + jids + ") s(j)"));
  // A row staged before sql/012 keeps its stored jid.
  db.scalar(
      "INSERT INTO staged_jobs (job_name, job_args, jid) VALUES ('x', '[1]', 'abcdefabcdefabcdefabcdef') RETURNING id");
  BOOST_TEST(db.scalar("SELECT staged_jobs_jid(id, jid) FROM staged_jobs WHERE job_name = 'x'") ==
             "abcdefabcdefabcdefabcdef");
  BOOST_TEST(db.scalar("SELECT count(*) FROM pg_index WHERE indrelid = 'staged_jobs'::regclass") == "1");
}

BOOST_AUTO_TEST_CASE(rides_keep_their_rows_when_the_key_is_deleted) {
  BOOST_REQUIRE(insert_key(alice, "ride-key-000000000000000"));
  {
    pqxx::work tx(db.conn());
    tx.exec_params(
        "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id) "
        "SELECT id, 1, 2, 3, 4, $1 FROM idempotency_keys",
        alice);
    tx.exec("DELETE FROM idempotency_keys");
    tx.commit();
  }
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides WHERE idempotency_key_id IS NULL") == "1");
}

BOOST_AUTO_TEST_CASE(coordinates_out_of_range_are_refused) {
  BOOST_CHECK_THROW(
      {
        pqxx::work tx(db.conn());
        tx.exec_params(
            "INSERT INTO rides (origin_lat, origin_lon, target_lat, target_lon, user_id) VALUES (91, 0, 0, 0, $1)",
            alice);
        tx.commit();
      },
      pqxx::check_violation);
}

// Every request statement is a call of the function of its own name (sql/functions/<name>.sql)
// with as many arguments as the function takes: a renamed function or a changed signature fails
// here, not in a request.
BOOST_AUTO_TEST_CASE(every_request_statement_calls_the_function_of_its_name) {
  namespace idem = rr::idempotency::statements;
  namespace rides = rr::rides::statements;
  const std::array<rr::db::Statement, 12> all{idem::kFindOrCreate,
                                              idem::kLockById,
                                              idem::kUnlock,
                                              idem::kFence,
                                              idem::kMoveRecoveryPoint,
                                              idem::kFinish,
                                              rides::kInsertRideWithAudit,
                                              rides::kStageReceiptForKey,
                                              rides::kCancelBegin,
                                              rides::kRefundTarget,
                                              rides::kStoreRefundKey,
                                              rides::kRecordRefund};
  for (const auto& statement : all) {
    std::string_view sql = statement.sql;
    std::string call = std::string("SELECT * FROM ") + statement.name + "(";
    BOOST_TEST(sql.substr(0, call.size()) == call, statement.name << ": " << sql);
    int parameters = 0;
    for (std::size_t at = sql.find('$'); at != std::string_view::npos; at = sql.find('$', at + 1)) ++parameters;
    pqxx::work tx(db.conn());
    auto found = tx.exec_params(
        "SELECT pronargs FROM pg_proc WHERE proname = $1 AND prolang = "
        "(SELECT oid FROM pg_language WHERE lanname = 'plpgsql')",
        statement.name);
    BOOST_TEST_REQUIRE(found.size() == 1u, statement.name << ": one PL/pgSQL function of that name");
    BOOST_TEST(found[0][0].as<int>() == parameters, statement.name);
  }
}

// A ride as POST /rides stores it (through the functions) and as GET /rides reads it
// (RR_RIDE_VIEW_COLUMNS) must agree to the byte: a replay and a read show the same ride.
BOOST_AUTO_TEST_CASE(a_ride_reads_the_same_from_the_functions_as_from_get_rides) {
  BOOST_REQUIRE(insert_key(alice, "ride-view-key-0000000000"));
  pqxx::work tx(db.conn());
  auto key_id = tx.exec("SELECT id FROM idempotency_keys")[0][0].as<std::int64_t>();
  // Coordinates whose float8 text is not the numeric's, and a timestamp with microseconds.
  tx.exec_params(
      "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id, created_at) "
      "VALUES ($1, 37.7749000000, -122.4194000000, 0.1000000000, -0.0000001000, $2, "
      "'2026-01-02 03:04:05.000007+00')",
      key_id, alice);
  auto charged = tx.exec_params(kRecordChargeAndStageReceiptV2, key_id, "ch_view", 1, "usd", alice);
  auto staged = tx.exec_params(rr::rides::statements::kStageReceiptForKey.sql, key_id, 1, "usd", alice);
  auto read = tx.exec_params("SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE idempotency_key_id = $1", key_id);
  BOOST_TEST_REQUIRE(charged.size() == 1u);
  BOOST_TEST_REQUIRE(staged.size() == 1u);
  BOOST_TEST_REQUIRE(read.size() == 1u);
  BOOST_TEST_REQUIRE(read[0].size() == charged[0].size());
  BOOST_TEST_REQUIRE(read[0].size() == staged[0].size());
  for (pqxx::row::size_type column = 0; column < read[0].size(); ++column) {
    BOOST_TEST(charged[0][column].c_str() == read[0][column].c_str(), "column " << column);
    BOOST_TEST(staged[0][column].c_str() == read[0][column].c_str(), "column " << column);
  }
  BOOST_TEST(read[0][6].c_str() == std::string("2026-01-02T03:04:05.000007Z"));
  BOOST_TEST(read[0][5].c_str() == std::string("ch_view"));
  // Both staged a receipt naming the ride.
  BOOST_TEST(tx.exec("SELECT count(*) FROM staged_jobs WHERE job_args->0->>'ride_id' IS NOT NULL")[0][0].as<int>() ==
             2);
}

// A cancelled ride reads the same from the cancel functions as from GET /rides, cancelled_at and
// stripe_refund_id included; the second cancellation changes nothing and stages nothing more.
BOOST_AUTO_TEST_CASE(a_cancelled_ride_reads_the_same_from_the_cancel_functions_as_from_get_rides) {
  namespace rides = rr::rides::statements;
  BOOST_REQUIRE(insert_key(alice, "cancel-view-key-00000000"));
  pqxx::work tx(db.conn());
  auto key_id = tx.exec("SELECT id FROM idempotency_keys")[0][0].as<std::int64_t>();
  auto ride_id =
      tx.exec_params(
            "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id, "
            "stripe_charge_id) VALUES ($1, 1, 2, 3, 4, $2, 'ch_cancel') RETURNING id",
            key_id, alice)[0][0]
          .as<std::int64_t>();
  // The charge as the finishing functions record it: a refund's ledger row refers to it.
  tx.exec_params(
      "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) "
      "VALUES ('ch_cancel', $1, $2, 2000, 'usd')",
      ride_id, alice);
  auto begun = tx.exec_params(rides::kCancelBegin.sql, ride_id, alice, "late", "usd", "{}", "127.0.0.1");
  BOOST_TEST_REQUIRE(begun.size() == 1u);
  BOOST_TEST(begun[0][0].c_str() == std::string("charged"));
  auto target = tx.exec_params(rides::kRefundTarget.sql, ride_id, alice);
  BOOST_TEST_REQUIRE(target.size() == 1u);
  BOOST_TEST(target[0][0].c_str() == std::string("ch_cancel"));
  // No random default since sql/012: the refund's key derives from the charge and is stored just
  // before the refund is sent (rides_store_refund_key).
  BOOST_TEST(target[0][1].is_null());
  auto recorded =
      tx.exec_params(rides::kRecordRefund.sql, ride_id, alice, "re_1", "late", 2000, "usd", "{}", "127.0.0.1");
  auto again =
      tx.exec_params(rides::kRecordRefund.sql, ride_id, alice, "re_2", "other", 2000, "usd", "{}", "127.0.0.1");
  auto cancelled = tx.exec_params(rides::kCancelBegin.sql, ride_id, alice, "late", "usd", "{}", "127.0.0.1");
  auto read = tx.exec_params("SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE id = $1", ride_id);
  BOOST_TEST_REQUIRE(recorded.size() == 1u);
  BOOST_TEST_REQUIRE(again.size() == 1u);
  BOOST_TEST_REQUIRE(cancelled.size() == 1u);
  BOOST_TEST(cancelled[0][0].c_str() == std::string("cancelled"));
  BOOST_TEST_REQUIRE(read[0].size() == recorded[0].size());
  for (pqxx::row::size_type column = 0; column < read[0].size(); ++column) {
    BOOST_TEST(recorded[0][column].c_str() == read[0][column].c_str(), "column " << column);
    BOOST_TEST(again[0][column].c_str() == read[0][column].c_str(), "column " << column);
    BOOST_TEST(cancelled[0][column + 1].c_str() == read[0][column].c_str(), "column " << column);
  }
  BOOST_TEST(read[0][8].c_str() == std::string("re_1"));  // the first refund stays
  BOOST_TEST(!read[0][7].is_null());
  BOOST_TEST(tx.exec("SELECT count(*) FROM staged_jobs WHERE job_name = 'send_cancellation_receipt'")[0][0].as<int>() ==
             1);
  // Another user's ride is no ride at all.
  BOOST_TEST(tx.exec_params(rides::kCancelBegin.sql, ride_id, bob, "", "usd", "{}", "127.0.0.1").empty());
  BOOST_TEST(tx.exec_params(rides::kRefundTarget.sql, ride_id, bob).empty());
}

// No ride for the key: both ride functions answer with no row and stage nothing.
BOOST_AUTO_TEST_CASE(the_ride_functions_answer_nothing_for_a_key_without_a_ride) {
  BOOST_REQUIRE(insert_key(alice, "no-ride-key-000000000000"));
  pqxx::work tx(db.conn());
  auto key_id = tx.exec("SELECT id FROM idempotency_keys")[0][0].as<std::int64_t>();
  BOOST_TEST(tx.exec_params(kRecordChargeAndStageReceiptV2, key_id, "ch_x", 1, "usd", alice).empty());
  BOOST_TEST(tx.exec_params(rr::rides::statements::kStageReceiptForKey.sql, key_id, 1, "usd", alice).empty());
  BOOST_TEST(tx.exec("SELECT count(*) FROM staged_jobs")[0][0].as<int>() == 0);
}

// The one-round-trip charge call for a key without a ride: it raises RR002 and leaves the key as it
// was (not finished, still locked), with no job staged, since the API cannot roll back after it.
BOOST_AUTO_TEST_CASE(recording_a_charge_for_a_key_without_a_ride_raises_and_writes_nothing) {
  BOOST_REQUIRE(insert_key(alice, "no-ride-key-000000000001"));
  db.scalar(
      "UPDATE idempotency_keys SET lock_token = '00000000-0000-4000-8000-000000000001', locked_at = now() "
      "RETURNING id");
  auto key_id = std::stoll(db.scalar("SELECT id FROM idempotency_keys"));
  try {
    pqxx::work tx(db.conn());
    tx.exec_params("SELECT rides_record_charge_and_finish($1, $2, 'ch_x', 1, 'usd', $3, 201, '{}')", key_id,
                   "00000000-0000-4000-8000-000000000001", alice);
    BOOST_FAIL("no error for a key without a ride");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(e.sqlstate() == "RR002", e.what());
  }
  // A lock that is not ours: RR001, before anything else is looked at.
  try {
    pqxx::work tx(db.conn());
    tx.exec_params("SELECT rides_record_charge_and_finish($1, $2, 'ch_x', 1, 'usd', $3, 201, '{}')", key_id,
                   "00000000-0000-4000-8000-000000000002", alice);
    BOOST_FAIL("no error for a lock that is not ours");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(e.sqlstate() == "RR001", e.what());
  }
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || (response_code IS NULL) || ' ' || (lock_token IS NOT NULL) "
                       "FROM idempotency_keys") == "started true true");
  BOOST_TEST(db.scalar("SELECT count(*) FROM staged_jobs") == "0");
}

BOOST_AUTO_TEST_SUITE_END()
