// db::CoalescedCalls on request fibers against a real PostgreSQL (issue 31, point 2): the calls
// that queue behind one in flight go as one call of the batch form, each request gets its own
// rows, its own error, or its single call run when the batch leaves it; a batch the database
// refuses runs each call alone; a broken connection reaches every request of its batch; the cap
// splits a long queue. No timing assertions: a session-level advisory lock held by the test keeps
// a call in flight until the queue behind it is in place.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/db/coalesced_calls.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/fiber/fiber.hpp"
#include "support/fibers.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::testing::run_fibers;

namespace {

// echo_one(n): n * 10, after the shared advisory lock 7 (the single calls) and recording n in
// `done`; n < 0 raises RR002, 999 raises P0001. echo_many: its batch form, after lock 8: per
// request (ordinal, failed_sqlstate, v); no row for n = 0 (left to the single call); any 999
// refuses the whole batch.
constexpr const char* kFunctions = R"sql(
  CREATE TABLE done (n int NOT NULL);
  CREATE FUNCTION echo_one(n int) RETURNS TABLE (v int) LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock_shared(7);
    IF n < 0 THEN RAISE EXCEPTION 'no row' USING ERRCODE = 'RR002'; END IF;
    IF n = 999 THEN RAISE EXCEPTION 'refused'; END IF;
    INSERT INTO done VALUES (n);
    RETURN QUERY SELECT n * 10;
  END $$;
  CREATE FUNCTION echo_many(ns int[]) RETURNS TABLE (ordinal int, failed_sqlstate text, v int)
  LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock_shared(8);
    IF 999 = ANY(ns) THEN RAISE EXCEPTION 'refused'; END IF;
    INSERT INTO done SELECT x FROM unnest(ns) x WHERE x > 0;
    RETURN QUERY
      SELECT o::int, CASE WHEN x < 0 THEN 'RR002' END, CASE WHEN x > 0 THEN x * 10 END
      FROM unnest(ns) WITH ORDINALITY AS t(x, o) WHERE x <> 0;
  END $$;
)sql";

rr::db::Call echo(int n) {
  auto call = rr::db::call("echo_one", n);
  call.batch_function = "echo_many";
  return call;
}

// What one request got back.
struct Got {
  std::optional<rr::db::CoalescedCalls::Answer> answer;
  std::string sqlstate;  // of a pqxx::sql_error
  bool broken = false;   // pqxx::broken_connection
  int value() const { return answer->rows.at(0)[answer->first_column].as<int>(); }
};

struct CoalescedCallsFixture {
  rr::test::TestDatabase db{/*migrated=*/false};
  rr::db::ConnectionPool pool{db.url(), db.session_options(), 4, 20s};
  pqxx::connection holder{db.url()};  // holds the advisory locks the calls wait for

  CoalescedCallsFixture() {
    pqxx::work tx(db.conn());
    tx.exec(kFunctions);
    tx.commit();
    pqxx::nontransaction(holder).exec("SELECT pg_advisory_lock(7), pg_advisory_lock(8)");
  }

  // Runs on a worker while the fiber waits: the test's own blocking queries keep off the I/O thread.
  void holder_exec(const std::string& sql) {
    rr::fiber::blocking([&] { pqxx::nontransaction(holder).exec(sql); });
  }
  std::string scalar_from_worker(const std::string& sql) { return rr::testing::scalar_from_worker(db, sql); }
  void wait_until_true(const std::string& sql) { rr::testing::wait_until_true(db, sql); }

  // A fiber body running `n`'s call through `calls` into `got`.
  std::function<void()> request(rr::db::CoalescedCalls& calls, int n, Got& got) {
    return [this, &calls, n, &got] {
      try {
        got.answer = calls.run(echo(n), [this] { return pool.acquire(); });
      } catch (const pqxx::broken_connection&) {
        got.broken = true;
      } catch (const pqxx::sql_error& e) {
        got.sqlstate = e.sqlstate();
      }
    };
  }

  // Fiber bodies: a first call (n = `first`) held in flight by lock 7, then one request per `ns`,
  // which queue behind it, then `release` once they all have.
  std::vector<std::function<void()>> queued_behind_one(rr::db::CoalescedCalls& calls, int first, Got& first_got,
                                                       const std::vector<int>& ns, std::vector<Got>& got,
                                                       std::function<void()> release) {
    std::vector<std::function<void()>> bodies{request(calls, first, first_got)};
    for (std::size_t i = 0; i < ns.size(); ++i) bodies.push_back(request(calls, ns[i], got[i]));
    bodies.push_back([&calls, count = ns.size(), release = std::move(release)] {
      // The fibers start in order on one I/O thread and each runs until it suspends: by now every
      // request is queued.
      BOOST_TEST(calls.totals()["echo_many"].queued == count);
      release();
    });
    return bodies;
  }

  // queued_behind_one for the batch form alone: lock 8 given up first, lock 7 (the first call's)
  // released once the others queued.
  void run_queued_behind_one(rr::db::CoalescedCalls& calls, Got& first, const std::vector<int>& ns,
                             std::vector<Got>& got) {
    holder_exec("SELECT pg_advisory_unlock(8)");
    run_fibers(queued_behind_one(calls, 1, first, ns, got, [&] { holder_exec("SELECT pg_advisory_unlock(7)"); }));
  }

  std::string done() { return db.scalar("SELECT string_agg(n::text, ',' ORDER BY n) FROM done"); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(coalesced_calls, CoalescedCallsFixture)

BOOST_AUTO_TEST_CASE(calls_queued_behind_one_in_flight_run_as_one_batch_each_with_its_own_answer) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(5);
  run_queued_behind_one(calls, first, {2, 3, -1, 0, 4}, got);

  BOOST_REQUIRE(first.answer.has_value());
  BOOST_TEST(first.answer->first_column == 0);  // alone: the single function's rows
  BOOST_TEST(first.value() == 10);
  for (int i : {0, 1, 4}) {
    BOOST_REQUIRE(got[i].answer.has_value());
    BOOST_TEST(got[i].answer->first_column == 2);  // its own row of the batch
    BOOST_TEST(got[i].answer->rows.size() == 1u);
  }
  BOOST_TEST(got[0].value() == 20);
  BOOST_TEST(got[1].value() == 30);
  BOOST_TEST(got[4].value() == 40);
  BOOST_TEST(!got[2].answer.has_value());
  BOOST_TEST(got[2].sqlstate == "RR002");  // its own error; the others committed
  BOOST_REQUIRE(got[3].answer.has_value());
  BOOST_TEST(got[3].answer->first_column == 0);  // no row in the batch: its single call ran
  BOOST_TEST(got[3].value() == 0);
  auto totals = calls.totals()["echo_many"];
  BOOST_TEST(totals.batches == 1u);
  BOOST_TEST(totals.batched_calls == 5u);
  BOOST_TEST(totals.queued == 0u);
  BOOST_TEST(done() == "0,1,2,3,4");
}

BOOST_AUTO_TEST_CASE(a_batch_the_database_refuses_runs_each_call_alone_and_only_the_one_at_fault_fails) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(3);
  run_queued_behind_one(calls, first, {5, 999, 6}, got);

  BOOST_REQUIRE(got[0].answer.has_value());
  BOOST_TEST(got[0].answer->first_column == 0);
  BOOST_TEST(got[0].value() == 50);
  BOOST_TEST(got[1].sqlstate == "P0001");
  BOOST_REQUIRE(got[2].answer.has_value());
  BOOST_TEST(got[2].value() == 60);
  BOOST_TEST(calls.totals()["echo_many"].batches == 1u);
  BOOST_TEST(done() == "1,5,6");  // nothing of the refused batch, each good call once
}

BOOST_AUTO_TEST_CASE(a_lost_connection_reaches_every_request_of_its_batch_and_no_other) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(3);
  run_fibers(queued_behind_one(calls, 1, first, {2, 3, 4}, got, [&] {
    holder_exec("SELECT pg_advisory_unlock(7)");
    // The batch now waits for lock 8: end its session under it.
    wait_until_true("SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 8 AND NOT granted");
    scalar_from_worker(
        "SELECT pg_terminate_backend(a.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.objid = 8 AND NOT l.granted");
    holder_exec("SELECT pg_advisory_unlock(8)");
  }));

  BOOST_REQUIRE(first.answer.has_value());
  BOOST_TEST(first.value() == 10);
  for (const auto& one : got) {
    BOOST_TEST(one.broken);
    BOOST_TEST(!one.answer.has_value());
  }
  BOOST_TEST(done() == "1");
}

BOOST_AUTO_TEST_CASE(the_cap_splits_a_long_queue_into_batches_led_in_turn) {
  rr::db::CoalescedCalls calls(3);
  Got first;
  std::vector<Got> got(5);
  run_queued_behind_one(calls, first, {2, 3, 4, 5, 6}, got);

  for (std::size_t i = 0; i < got.size(); ++i) {
    BOOST_REQUIRE(got[i].answer.has_value());
    BOOST_TEST(got[i].value() == static_cast<int>(i + 2) * 10);
  }
  auto totals = calls.totals()["echo_many"];
  BOOST_TEST(totals.batches == 2u);  // 2, 3, 4 then 5, 6
  BOOST_TEST(totals.batched_calls == 5u);
  BOOST_TEST(done() == "1,2,3,4,5,6");
}

BOOST_AUTO_TEST_CASE(with_nothing_in_flight_or_off_a_fiber_a_call_runs_alone_at_once) {
  pqxx::nontransaction(holder).exec("SELECT pg_advisory_unlock(7), pg_advisory_unlock(8)");
  rr::db::CoalescedCalls calls(64);
  auto off_fiber = calls.run(echo(7), [this] { return pool.acquire(); });
  BOOST_TEST(off_fiber.first_column == 0);
  BOOST_TEST(off_fiber.rows.at(0)[0].as<int>() == 70);
  Got one, two;
  // One fiber after the other: neither finds a call in flight, so neither waits for company.
  run_fibers({[&] {
    request(calls, 8, one)();
    request(calls, 9, two)();
  }});
  BOOST_TEST(one.value() == 80);
  BOOST_TEST(two.value() == 90);
  BOOST_TEST(calls.totals()["echo_many"].batches == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
