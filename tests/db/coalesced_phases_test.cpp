// The batch forms of a new key's two phases (coalesced commits), against a real
// PostgreSQL: rides_create_with_keys and rides_record_charges_and_finish answer each request of a
// batch as its single function would, in one statement, and a request that fails leaves the others'
// work committed and its own unwritten. The API's use of them: coalesced_calls_test, coalesced_requests_test.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <string>

#include "common/db/coalesced_calls.hpp"
#include "support/test_database.hpp"

using rr::test::TestDatabase;

namespace {

struct BatchFixture {
  TestDatabase db;
  std::int64_t alice = 0;

  BatchFixture() {
    alice = std::stoll(
        db.scalar("INSERT INTO users (email, stripe_customer_id) VALUES ('alice@example.com', 'cus_a') RETURNING id"));
  }

  // rides_create_with_keys for `keys` (with `tokens`) as alice, each ride at (1, 2) -> (3, `target_lons`).
  pqxx::result create(const std::string& keys, const std::string& tokens, const std::string& target_lons) {
    pqxx::work tx(db.conn());
    auto n = std::to_string(std::count(keys.begin(), keys.end(), ',') + 1);
    auto repeat = [&](const std::string& value) { return "array_fill(" + value + ", ARRAY[" + n + "])"; };
    auto rows = tx.exec(
        "SELECT ordinal, inserted, id, locked, same_request, ride_id, response_code, response_body "
        "FROM rides_create_with_keys(" +
        repeat(std::to_string(alice) + "::bigint") + ", ARRAY[" + keys + "]::text[], " + repeat("'POST'::text") + ", " +
        repeat("'/rides'::text") + ", " + repeat("'{\"a\":1}'::jsonb") + ", " + repeat("'127.0.0.1'::text") +
        ", ARRAY[" + tokens + "]::uuid[], " + repeat("90::float8") + ", " + repeat("1::numeric") + ", " +
        repeat("2::numeric") + ", " + repeat("3::numeric") + ", ARRAY[" + target_lons + "]::numeric[], " +
        repeat("'rr-ch-x'::text") + ") ORDER BY ordinal");
    tx.commit();
    return rows;
  }
};

constexpr const char* kT1 = "'00000000-0000-4000-8000-000000000001'";
constexpr const char* kT2 = "'00000000-0000-4000-8000-000000000002'";
constexpr const char* kT3 = "'00000000-0000-4000-8000-000000000003'";

// Makes `session` hand its pending counts to the statistics collector, which it does on going idle
// after pg_stat_force_next_flush(), before the answer that follows.
void flush_statistics(pqxx::connection& session) {
  pqxx::nontransaction tx(session);
  tx.exec("SELECT pg_stat_force_next_flush()");
}

// Rows read from the tables the batches read, sequentially or through an index (a whole-table
// read through an index counts too), as the collector has them: per table ("table=rows ...") for
// messages, and in all.
struct RowsRead {
  std::string by_table;
  long total = 0;
};

RowsRead rows_read(pqxx::connection& reader) {
  pqxx::nontransaction tx(reader);
  tx.exec("SELECT pg_stat_clear_snapshot()");
  auto row = tx.exec1(
      "SELECT string_agg(relname || '=' || (seq_tup_read + COALESCE(idx_tup_fetch, 0)), ' ' ORDER BY relname), "
      "sum(seq_tup_read + COALESCE(idx_tup_fetch, 0)) "
      "FROM pg_stat_user_tables WHERE relname IN ('idempotency_keys', 'rides', 'provider_charges')");
  return {row[0].as<std::string>(), row[1].as<long>()};
}

// Ten new keys for `user` created by rides_create_with_keys and finished by
// rides_record_charges_and_finish on `session`, as the API's coalescer calls them.
void create_and_finish_ten_keys(pqxx::connection& session, std::int64_t user, int first) {
  std::string ids = "{", tokens = "{";
  {
    pqxx::work tx(session);
    auto rows = tx.exec_params(
        "SELECT id, lock_token FROM rides_create_with_keys(array_fill($1::bigint, ARRAY[10]), "
        "ARRAY(SELECT 'stale-plan-key-' || lpad(x::text, 8, '0') FROM generate_series($2::int, $2 + 9) x), "
        "array_fill('POST'::text, ARRAY[10]), array_fill('/rides'::text, ARRAY[10]), "
        "array_fill('{}'::jsonb, ARRAY[10]), array_fill(''::text, ARRAY[10]), "
        "ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 10)), array_fill(90::float8, ARRAY[10]), "
        "array_fill(1::numeric, ARRAY[10]), array_fill(2::numeric, ARRAY[10]), array_fill(3::numeric, ARRAY[10]), "
        "array_fill(4::numeric, ARRAY[10]), ARRAY(SELECT 'rr-' || x FROM generate_series($2::int, $2 + 9) x)) "
        "ORDER BY ordinal",
        user, first);
    tx.commit();
    BOOST_TEST_REQUIRE(rows.size() == 10u);
    for (const auto& row : rows) {
      ids += (ids.size() > 1 ? "," : "") + row[0].as<std::string>();
      tokens += (tokens.size() > 1 ? "," : "") + row[1].as<std::string>();
    }
  }
  ids += "}";
  tokens += "}";
  pqxx::work tx(session);
  auto failed = tx.exec_params1(
      "SELECT count(failed_sqlstate) FROM rides_record_charges_and_finish($1::bigint[], $2::uuid[], "
      "ARRAY(SELECT 'ch_stale_' || x FROM unnest($1::bigint[]) x), array_fill(2000::bigint, ARRAY[10]), "
      "array_fill('usd'::text, ARRAY[10]), array_fill($3::bigint, ARRAY[10]), array_fill(201, ARRAY[10]), "
      "array_fill('{}'::text, ARRAY[10]))",
      ids, tokens, user);
  tx.commit();
  BOOST_TEST(failed[0].as<int>() == 0);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(coalesced_phases, BatchFixture)

BOOST_AUTO_TEST_CASE(a_batch_of_new_keys_creates_each_key_its_ride_and_its_audit_record_in_one_statement) {
  auto rows = create("'batch-key-000000000001', 'batch-key-000000000002', 'batch-key-000000000003'",
                     std::string(kT1) + "," + kT2 + "," + kT3, "4, 5, 6");
  BOOST_TEST_REQUIRE(rows.size() == 3u);
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(rows[i][0].as<int>() == i + 1);
    BOOST_TEST(rows[i][1].as<bool>());
    BOOST_TEST(!rows[i][5].is_null());
  }
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides") == "3");
  BOOST_TEST(db.scalar("SELECT count(*) FROM audit_records") == "3");
  // Each ride carries its own request's coordinates, each key its own request's token.
  BOOST_TEST(
      db.scalar("SELECT string_agg(k.idempotency_key || '=' || r.target_lon::float8 || '/' || k.lock_token, ' ' "
                "ORDER BY k.idempotency_key) FROM idempotency_keys k JOIN rides r ON r.idempotency_key_id = k.id") ==
      "batch-key-000000000001=4/00000000-0000-4000-8000-000000000001 "
      "batch-key-000000000002=5/00000000-0000-4000-8000-000000000002 "
      "batch-key-000000000003=6/00000000-0000-4000-8000-000000000003");
}

BOOST_AUTO_TEST_CASE(an_existing_key_is_read_and_a_key_named_twice_is_left_to_the_single_function) {
  create("'existing-key-00000000001'", kT1, "4");
  auto rows = create("'existing-key-00000000001', 'fresh-key-000000000000001', 'fresh-key-000000000000001'",
                     std::string(kT2) + "," + kT2 + "," + kT3, "4, 5, 6");
  BOOST_TEST_REQUIRE(rows.size() == 2u);  // the second request for the fresh key has no row: run it alone
  BOOST_TEST(rows[0][0].as<int>() == 1);
  BOOST_TEST(!rows[0][1].as<bool>());  // existing
  BOOST_TEST(rows[0][3].as<bool>());   // locked by the first batch's request
  BOOST_TEST(rows[0][5].is_null());    // no ride for a key that exists
  BOOST_TEST(rows[1][0].as<int>() == 2);
  BOOST_TEST(rows[1][1].as<bool>());
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides") == "2");
}

BOOST_AUTO_TEST_CASE(a_row_a_check_refuses_fails_the_whole_batch_and_writes_nothing) {
  BOOST_CHECK_THROW(create("'check-key-000000000001', 'check-key-000000000002'", std::string(kT1) + "," + kT2,
                           "4, 200"),  // longitude 200: the CHECK on rides
                    pqxx::sql_error);
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides") == "0");
}

BOOST_AUTO_TEST_CASE(finishing_a_batch_answers_each_request_and_commits_only_the_ones_that_hold) {
  auto created = create("'finish-key-000000000001', 'finish-key-000000000002', 'finish-key-000000000003'",
                        std::string(kT1) + "," + kT2 + "," + kT3, "4, 5, 6");
  BOOST_TEST_REQUIRE(created.size() == 3u);
  auto id = [&](int i) { return created[i][2].as<std::string>(); };
  // The third key loses its ride: RR002. The second is finished with a token that is not its own: RR001.
  db.scalar("DELETE FROM rides WHERE idempotency_key_id = " + id(2) + " RETURNING id");
  auto ok_body = db.scalar(
      "SELECT rides_created_body_v1(r.id, r.origin_lat, r.origin_lon, r.target_lat, r.target_lon, 'ch_1', "
      "r.created_at) "
      "FROM rides r WHERE r.idempotency_key_id = " +
      id(0));
  pqxx::work tx(db.conn());
  auto rows = tx.exec_params(
      "SELECT ordinal, failed_sqlstate FROM rides_record_charges_and_finish(ARRAY[" + id(0) + ", " + id(1) + ", " +
          id(2) + "]::bigint[], ARRAY[" + kT1 + ", " + kT3 + ", " + kT3 +
          "]::uuid[], ARRAY['ch_1', 'ch_2', 'ch_3'], ARRAY[2000, 2000, 2000]::bigint[], ARRAY['usd', 'usd', 'usd'], "
          "ARRAY[$1, $1, $1]::bigint[], ARRAY[201, 201, 201], ARRAY[$2, 'x', 'y']) ORDER BY ordinal",
      alice, ok_body);
  tx.commit();
  BOOST_TEST_REQUIRE(rows.size() == 3u);
  BOOST_TEST(rows[0][1].is_null());
  BOOST_TEST(rows[1][1].as<std::string>() == "RR001");
  BOOST_TEST(rows[2][1].as<std::string>() == "RR002");
  // The finished 201 is stored as NULL, naming the renderer that renders it back (sql/019; the
  // unfinished keys have the column's default, read only for a NULL finished body).
  BOOST_TEST(db.scalar("SELECT string_agg(recovery_point || ':' || COALESCE(response_body, 'NULL') || ':' || "
                       "(lock_token IS NULL)::text || ':' || COALESCE(response_renderer::text, '-'), ' ' ORDER BY id) "
                       "FROM idempotency_keys") ==
             "finished:NULL:true:1 ride_created:NULL:false:1 ride_created:NULL:false:1");
  BOOST_TEST(db.scalar("SELECT string_agg(COALESCE(stripe_charge_id, '-'), ' ' ORDER BY id) FROM rides") == "ch_1 -");
  BOOST_TEST(db.scalar("SELECT count(*) FROM staged_jobs") == "1");
}

BOOST_AUTO_TEST_CASE(a_batch_call_carries_each_argument_as_an_array_postgresql_reads_back_unchanged) {
  const std::string body = R"({"message":"Ride \"created\"","path":"C:\\x","list":[1,{"a":null}]})";
  auto first = rr::db::call("f", 1, std::string("a,b"), body);
  auto second = rr::db::call("f", 2, std::optional<std::string>{}, std::string("NULL"));
  auto batch = rr::db::batch_call("f_many", {&first, &second});
  BOOST_TEST(batch.function == "f_many");
  BOOST_TEST_REQUIRE(batch.arguments.size() == 3u);
  pqxx::work tx(db.conn());
  auto row = tx.exec_params(
      "SELECT ($1::bigint[])[2], ($2::text[])[1], ($2::text[])[2] IS NULL, ($3::text[])[1], ($3::text[])[2], "
      "cardinality($3::text[])",
      *batch.arguments[0], *batch.arguments[1], *batch.arguments[2])[0];
  BOOST_TEST(row[0].as<int>() == 2);
  BOOST_TEST(row[1].as<std::string>() == "a,b");
  BOOST_TEST(row[2].as<bool>());
  BOOST_TEST(row[3].as<std::string>() == body);
  BOOST_TEST(row[4].as<std::string>() == "NULL");  // the text, not a NULL element
  BOOST_TEST(row[5].as<int>() == 2);
}

// A database `migrate` just made has no statistics: the first batches of a session are planned for
// tiny tables, and the session keeps those plans while the tables grow, until an autoanalyze. No
// plan of a batch function may read a whole table, then or later.
BOOST_AUTO_TEST_CASE(batches_planned_while_the_tables_were_tiny_still_read_no_table_whole) {
  db.scalar(
      "ALTER TABLE idempotency_keys SET (autovacuum_enabled = false); "
      "ALTER TABLE rides SET (autovacuum_enabled = false); "
      "ALTER TABLE provider_charges SET (autovacuum_enabled = false)");
  pqxx::connection session(db.direct_url());  // one pooled connection of the API: its plans are cached
  for (int first = 1; first <= 60; first += 10) create_and_finish_ten_keys(session, alice, first);
  // Thousands of keys, rides and charges later (from other sessions), still never analyzed.
  db.scalar(
      "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
      "recovery_point, response_code, locked_at, user_id) "
      "SELECT 'grown-key-' || lpad(g::text, 12, '0'), 'POST', '{}', '/rides', 'finished', 201, NULL, " +
      std::to_string(alice) +
      " FROM generate_series(1, 5000) g; "
      "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id, "
      "stripe_charge_id) SELECT id, 1, 2, 3, 4, user_id, 'ch_grown_' || id FROM idempotency_keys "
      "WHERE idempotency_key LIKE 'grown-key-%'; "
      "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) "
      "SELECT stripe_charge_id, id, user_id, 2000, 'usd' FROM rides WHERE stripe_charge_id LIKE 'ch_grown_%'");
  pqxx::connection reader(db.direct_url());
  flush_statistics(db.conn());
  flush_statistics(session);
  auto before = rows_read(reader);
  for (int first = 61; first <= 260; first += 10) create_and_finish_ten_keys(session, alice, first);
  flush_statistics(session);
  auto after = rows_read(reader);
  BOOST_TEST_MESSAGE("rows read, before and after the batches: " << before.by_table << " -> " << after.by_table);
  // 200 keys, a few probes each through a unique index: a few hundred rows. One whole table a
  // batch would be 5,000 or more each time.
  BOOST_TEST(after.total - before.total <= 2000, before.by_table << " -> " << after.by_table);
  BOOST_TEST(db.scalar("SELECT count(*) FROM provider_charges WHERE stripe_charge_id LIKE 'ch_stale_%'") == "260");
}

// A ride's audit record and its receipt job are defined once (rides_created_audit,
// rides_receipt_job) for the three ways a ride is made and charged: single calls, a batch, a
// resumed key (rides_insert_with_audit, rides_stage_ride_receipt). Each way here, from a request
// without an address, must write the same bytes.
BOOST_AUTO_TEST_CASE(a_ride_made_by_single_calls_in_a_batch_or_by_a_resumed_key_is_audited_and_receipted_alike) {
  const std::string token_single = "00000000-0000-4000-8000-0000000000a1";
  const std::string token_batch = "00000000-0000-4000-8000-0000000000a2";
  pqxx::work tx(db.conn());
  auto single = tx.exec_params1(
      "SELECT id, ride_id FROM rides_create_with_key($1, 'alike-single-key-000001', 'POST', '/rides', '{\"a\":1}', '', "
      "$2::uuid, "
      "90, 1, 2, 3, 4, 'rr-alike-single')",
      alice, token_single);
  tx.exec_params("SELECT rides_record_charge_and_finish($1, $2::uuid, 'ch_alike_single', 2000, 'usd', $3, 201, '{}')",
                 single[0].as<std::int64_t>(), token_single, alice);
  auto batch = tx.exec_params1(
      "SELECT id, ride_id FROM rides_create_with_keys(ARRAY[$1::bigint], ARRAY['alike-batch-key-0000001'], "
      "ARRAY['POST'], "
      "ARRAY['/rides'], ARRAY['{\"a\":1}'::jsonb], ARRAY[''], ARRAY[$2::uuid], ARRAY[90::float8], ARRAY[1::numeric], "
      "ARRAY[2::numeric], ARRAY[3::numeric], ARRAY[4::numeric], ARRAY['rr-alike-batch'])",
      alice, token_batch);
  BOOST_TEST(tx.exec_params1("SELECT count(failed_sqlstate) FROM rides_record_charges_and_finish(ARRAY[$1::bigint], "
                             "ARRAY[$2::uuid], ARRAY['ch_alike_batch'], ARRAY[2000::bigint], ARRAY['usd'], "
                             "ARRAY[$3::bigint], ARRAY[201], ARRAY['{}'])",
                             batch[0].as<std::int64_t>(), token_batch, alice)[0]
                 .as<int>() == 0);
  auto resumed_key =
      tx.exec_params1(
            "INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, request_params, "
            "recovery_point) VALUES ($1, 'alike-resumed-key-00001', 'POST', '/rides', '{\"a\":1}', 'started') "
            "RETURNING id",
            alice)[0]
          .as<std::int64_t>();
  auto resumed_ride = tx.exec_params1("SELECT * FROM rides_insert_with_audit($1, 1, 2, 3, 4, $2, '{\"a\":1}', '')",
                                      resumed_key, alice)[0]
                          .as<std::int64_t>();
  tx.exec_params("SELECT rides_stage_ride_receipt($1, 2000, 'usd', $2)", resumed_ride, alice);
  const auto written = [&](std::int64_t ride) {
    return tx
        .exec_params1(
            "SELECT concat_ws(' | ', (SELECT string_agg(concat_ws(':', a.action, a.resource_type, a.data::text, "
            "a.origin_ip::text, a.user_id = $2), ',') FROM audit_records a WHERE a.resource_id = $1), "
            "(SELECT string_agg(concat_ws(':', j.job_name, j.job_args::text), ',') FROM staged_jobs j "
            "WHERE j.job_args->0->>'ride_id' = $1::text))",
            ride, alice)[0]
        .as<std::string>();
  };
  const std::string receipt =
      R"(send_ride_receipt:[{"amount": 2000, "ride_id": RIDE, "user_id": USER, "currency": "usd"}])";
  for (auto ride : {single[1].as<std::int64_t>(), batch[1].as<std::int64_t>(), resumed_ride}) {
    std::string expected = R"(create_ride:ride:{"a": 1}:0.0.0.0/32:t | )" + receipt;
    expected.replace(expected.find("RIDE"), 4, std::to_string(ride));
    expected.replace(expected.find("USER"), 4, std::to_string(alice));
    BOOST_TEST(written(ride) == expected);
  }
}

// Sharing those two definitions costs no call: each is inlined into the statement that uses it, as
// if its SELECT were written there (a function the planner cannot inline shows as a Function Scan).
BOOST_AUTO_TEST_CASE(the_shared_audit_and_receipt_definitions_are_inlined_into_the_statements) {
  pqxx::work tx(db.conn());
  std::string plan;
  for (const auto& row :
       tx.exec("EXPLAIN (VERBOSE, COSTS OFF) WITH ride AS (INSERT INTO rides (origin_lat, origin_lon, target_lat, "
               "target_lon, user_id) VALUES (1, 2, 3, 4, " +
               std::to_string(alice) +
               ") RETURNING id), audit AS (INSERT INTO audit_records (action, data, origin_ip, resource_id, "
               "resource_type, user_id) SELECT a.* FROM ride, rides_created_audit('{}', '', ride.id, 1) a) "
               "INSERT INTO staged_jobs (job_name, job_args) SELECT j.* FROM ride, rides_receipt_job(ride.id, 2000, "
               "'usd', 1) j"))
    plan += row[0].as<std::string>() + "\n";
  BOOST_TEST(plan.find("Function Scan") == std::string::npos, plan);
  BOOST_TEST(plan.find("'create_ride'::text") != std::string::npos, plan);
  BOOST_TEST(plan.find("'send_ride_receipt'::text") != std::string::npos, plan);
}

// A batch function's statement is planned once per session, whatever the sizes of its arrays:
// PL/pgSQL's plan cache would otherwise find the custom plan for a small batch cheaper than the
// generic one and plan the whole statement again at every call. Counted by
// pg_stat_statements (loaded by scripts/test.sh), which sees the functions' own statements with
// track = all and counts their planning with track_planning.
BOOST_AUTO_TEST_CASE(a_batch_functions_statement_is_planned_once_per_session_whatever_its_sizes) {
  // A database with some history, its statistics gathered: on tables this size the custom plan for
  // a small batch keeps looking cheaper than the generic one (on empty ones the cache settles on
  // the generic plan after its first five custom plans).
  db.scalar(
      "SELECT count(*) FROM generate_series(1, 20) b, LATERAL (SELECT * FROM rides_create_with_keys("
      "array_fill(" +
      std::to_string(alice) +
      "::bigint, ARRAY[100]), ARRAY(SELECT 'history-key-' || "
      "lpad((b * 1000 + x)::text, 12, '0') FROM generate_series(1, 100) x), array_fill('POST'::text, ARRAY[100]), "
      "array_fill('/rides'::text, ARRAY[100]), array_fill('{}'::jsonb, ARRAY[100]), array_fill(''::text, "
      "ARRAY[100]), ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 100)), array_fill(90::float8, "
      "ARRAY[100]), array_fill(1::numeric, ARRAY[100]), array_fill(2::numeric, ARRAY[100]), "
      "array_fill(3::numeric, ARRAY[100]), array_fill(4::numeric, ARRAY[100]), ARRAY(SELECT 'rr-history-' || "
      "(b * 1000 + x) FROM generate_series(1, 100) x))) y");
  pqxx::nontransaction(db.conn()).exec("ANALYZE");
  // Straight to PostgreSQL: a plan is a session's, and through PgBouncer calls move between sessions.
  pqxx::connection session(db.direct_url());
  // scripts/test.sh starts PostgreSQL with shared_preload_libraries=pg_stat_statements.
  db.scalar("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  pqxx::nontransaction(session).exec(
      "SET pg_stat_statements.track = 'all'; SET pg_stat_statements.track_planning = on");
  // More calls than the five custom plans PostgreSQL's plan cache always makes before it weighs the
  // generic one, so that planning at every call shows as more plans than that.
  for (int call = 0; call < 7; ++call) create_and_finish_ten_keys(session, alice, 1 + 10 * call);
  {
    pqxx::work tx(session);
    for (int size = 1; size <= 7; ++size)
      tx.exec_params(
          "SELECT count(*) FROM rides_create_with_keys(array_fill($1::bigint, ARRAY[$2::int]), "
          "ARRAY(SELECT 'planned-once-' || $2::int || '-' || lpad(x::text, 8, '0') FROM generate_series(1, $2::int) "
          "x), "
          "array_fill('POST'::text, ARRAY[$2::int]), array_fill('/rides'::text, ARRAY[$2::int]), "
          "array_fill('{}'::jsonb, ARRAY[$2::int]), array_fill(''::text, ARRAY[$2::int]), "
          "ARRAY(SELECT gen_random_uuid() FROM generate_series(1, $2::int)), array_fill(90::float8, ARRAY[$2::int]), "
          "array_fill(1::numeric, ARRAY[$2::int]), array_fill(2::numeric, ARRAY[$2::int]), "
          "array_fill(3::numeric, ARRAY[$2::int]), array_fill(4::numeric, ARRAY[$2::int]), "
          "ARRAY(SELECT 'rr-once-' || $2::int || '-' || x FROM generate_series(1, $2::int) x))",
          alice, size);
    tx.commit();
  }
  auto counts = pqxx::nontransaction(session).exec(
      "SELECT CASE WHEN query LIKE '%INSERT INTO idempotency_keys%' THEN 'create' ELSE 'finish' END, "
      "sum(calls)::int, sum(plans)::int FROM pg_stat_statements "
      "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
      "AND (query LIKE '%unnest%INSERT INTO idempotency_keys AS k%' OR query LIKE '%UPDATE idempotency_keys k%FROM "
      "target t%') "
      "GROUP BY 1 ORDER BY 1");
  BOOST_TEST_REQUIRE(counts.size() == 2u, "pg_stat_statements lists " << counts.size() << " of the two statements");
  for (const auto& row : counts) {
    BOOST_TEST(row[1].as<int>() >= 7, row[0].c_str() << ": " << row[1].as<int>() << " calls");
    BOOST_TEST(row[2].as<int>() <= 1,
               row[0].c_str() << ": planned " << row[2].as<int>() << " times in " << row[1].as<int>() << " calls");
  }
}

BOOST_AUTO_TEST_SUITE_END()
