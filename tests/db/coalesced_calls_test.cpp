// db::CoalescedCalls on request fibers against a real PostgreSQL: the calls that queue behind one
// in flight go as one call of the batch form, each request gets its own rows, its own error, or
// its single call run when the batch leaves it; a batch the database refuses a row of runs each
// call alone once; an outage (a broken connection, a cancelled statement, an exhausted pool)
// reaches every request of its batch once and runs nothing again; a bug (a wrong call, an answer
// naming a request the batch did not carry) fails every request once and runs nothing again; a
// waiter whose fiber unwinds leaves the queue; the cap splits a long queue. No timing assertions:
// a session-level advisory lock held by the test keeps a call in flight until the queue behind it
// is in place.
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "common/db/coalesced_calls.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/db/outage.hpp"
#include "common/fiber/fiber.hpp"
#include "common/fiber/fiber_context.hpp"
#include "support/fibers.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::testing::run_fibers;

namespace {

// echo_one(n): n * 10, after the shared advisory lock 7 (the single calls) and recording n in
// `done`; n < 0 raises RR002, 999 a check violation (23514). echo_many: its batch form, after
// lock 8: per request (ordinal, failed_sqlstate, v); no row for n = 0 (left to the single call);
// any 999 refuses the whole batch with a check violation, as a CHECK on one row would; any 4242
// calls a function that does not exist (42883: a bug); 777 is answered under ordinal 99.
constexpr const char* kFunctions = R"sql(
  CREATE TABLE done (n int NOT NULL);
  CREATE FUNCTION echo_one(n int) RETURNS TABLE (v int) LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock_shared(7);
    IF n < 0 THEN RAISE EXCEPTION 'no row' USING ERRCODE = 'RR002'; END IF;
    IF n = 999 THEN RAISE EXCEPTION 'refused' USING ERRCODE = 'check_violation'; END IF;
    INSERT INTO done VALUES (n);
    RETURN QUERY SELECT n * 10;
  END $$;
  CREATE FUNCTION echo_many(ns int[]) RETURNS TABLE (ordinal int, failed_sqlstate text, v int)
  LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock_shared(8);
    IF 999 = ANY(ns) THEN RAISE EXCEPTION 'refused' USING ERRCODE = 'check_violation'; END IF;
    IF 4242 = ANY(ns) THEN PERFORM no_such_function(); END IF;
    INSERT INTO done SELECT x FROM unnest(ns) x WHERE x > 0;
    RETURN QUERY
      SELECT CASE WHEN x = 777 THEN 99 ELSE o::int END, CASE WHEN x < 0 THEN 'RR002' END,
             CASE WHEN x > 0 THEN x * 10 END
      FROM unnest(ns) WITH ORDINALITY AS t(x, o) WHERE x <> 0;
  END $$;
)sql";

rr::db::Call echo(int n) {
  auto call = rr::db::call("echo_one", n);
  call.batch_function = "echo_many";
  return call;
}

// What one request got back, and how many connections its fiber checked out.
struct Got {
  std::optional<rr::db::CoalescedCalls::Answer> answer;
  std::string sqlstate;  // of a pqxx::sql_error
  bool broken = false;   // pqxx::broken_connection
  bool outage = false;   // an error the API answers 503 with Retry-After (db::outage_message)
  std::string error;     // what() of any error
  int checkouts = 0;
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

  // A fiber body running `n`'s call through `calls` into `got`, checking out from `from` (the
  // fixture's pool when null).
  std::function<void()> request(rr::db::CoalescedCalls& calls, int n, Got& got,
                                rr::db::ConnectionPool* from = nullptr) {
    return [this, &calls, n, &got, from] {
      auto& source = from ? *from : pool;
      try {
        got.answer = calls.run(echo(n), [&] {
          ++got.checkouts;
          return source.acquire();
        });
      } catch (const std::exception& e) {
        got.error = e.what();
        got.outage = rr::db::outage_message(e).has_value();
        got.broken = dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr;
        if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) got.sqlstate = sql->sqlstate();
      }
    };
  }

  static std::uint64_t fallbacks(rr::db::CoalescedCalls& calls, rr::db::CoalescedFallback cause) {
    return calls.totals()["echo_many"].fallbacks[static_cast<std::size_t>(cause)];
  }

  // Fiber bodies: a first call (n = `first`) held in flight by lock 7, then one request per `ns`,
  // which queue behind it, then `release` once they all have.
  std::vector<std::function<void()>> queued_behind_one(rr::db::CoalescedCalls& calls, int first, Got& first_got,
                                                       const std::vector<int>& ns, std::vector<Got>& got,
                                                       std::function<void()> release,
                                                       rr::db::ConnectionPool* from = nullptr) {
    std::vector<std::function<void()>> bodies{request(calls, first, first_got, from)};
    for (std::size_t i = 0; i < ns.size(); ++i) bodies.push_back(request(calls, ns[i], got[i], from));
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

  // A `release` for queued_behind_one: lock 7 given up, so the batch starts and waits for lock 8;
  // then its statement is ended with `stop` (pg_cancel_backend: 57014, as a statement timeout
  // ends it; pg_terminate_backend: its session lost) and lock 8 is given up.
  std::function<void()> interrupt_the_batch(const std::string& stop) {
    return [this, stop] {
      holder_exec("SELECT pg_advisory_unlock(7)");
      wait_until_true("SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 8 AND NOT granted");
      scalar_from_worker("SELECT " + stop +
                         "(l.pid) FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objid = 8 AND NOT l.granted");
      holder_exec("SELECT pg_advisory_unlock(8)");
    };
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

BOOST_AUTO_TEST_CASE(a_batch_refused_for_one_row_runs_each_call_alone_once_and_only_the_one_at_fault_fails) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(3);
  run_queued_behind_one(calls, first, {5, 999, 6}, got);

  BOOST_REQUIRE(got[0].answer.has_value());
  BOOST_TEST(got[0].answer->first_column == 0);
  BOOST_TEST(got[0].value() == 50);
  BOOST_TEST(got[1].sqlstate == "23514");  // its single call's own refusal, a 4xx/500 the flow decides
  BOOST_TEST(!got[1].outage);
  BOOST_REQUIRE(got[2].answer.has_value());
  BOOST_TEST(got[2].value() == 60);
  BOOST_TEST(calls.totals()["echo_many"].batches == 1u);
  BOOST_TEST(done() == "1,5,6");  // nothing of the refused batch, each good call once
  // The batch's leader checked out for the batch and for its own single call; the others once.
  BOOST_TEST(got[0].checkouts == 2);
  BOOST_TEST(got[1].checkouts == 1);
  BOOST_TEST(got[2].checkouts == 1);
  BOOST_TEST(fallbacks(calls, rr::db::CoalescedFallback::refused) == 1u);
}

BOOST_AUTO_TEST_CASE(a_batch_cancelled_in_flight_answers_every_request_as_an_outage_once_and_runs_nothing_again) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(3);
  run_fibers(queued_behind_one(calls, 1, first, {2, 3, 4}, got, interrupt_the_batch("pg_cancel_backend")));

  BOOST_REQUIRE(first.answer.has_value());
  BOOST_TEST(first.value() == 10);
  for (const auto& one : got) {
    BOOST_TEST(!one.answer.has_value());
    BOOST_TEST(one.sqlstate == "57014");
    BOOST_TEST(one.outage);  // 503 with Retry-After at the API's edge
  }
  // One checkout for the batch (its leader's), none for single calls.
  BOOST_TEST(got[0].checkouts + got[1].checkouts + got[2].checkouts == 1);
  BOOST_TEST(done() == "1");  // no single call ran after the batch
  BOOST_TEST(fallbacks(calls, rr::db::CoalescedFallback::outage) == 1u);
}

BOOST_AUTO_TEST_CASE(an_exhausted_pool_answers_every_queued_request_as_an_outage_with_one_checkout_per_batch) {
  // One connection, held here the whole time: every checkout waits out its timeout, as under a
  // load the pool cannot serve.
  rr::db::ConnectionPool tiny{db.url(), db.session_options(), 1, 300ms};
  auto held = tiny.acquire();
  holder_exec("SELECT pg_advisory_unlock(7), pg_advisory_unlock(8)");
  rr::db::CoalescedCalls calls(64);
  constexpr int kKeys = 40;
  std::vector<Got> got(kKeys);
  std::vector<std::function<void()>> bodies;
  for (int i = 0; i < kKeys; ++i) bodies.push_back(request(calls, i + 1, got[i], &tiny));
  run_fibers(std::move(bodies));

  int checkouts = 0;
  for (const auto& one : got) {
    BOOST_TEST(!one.answer.has_value());
    BOOST_TEST(one.outage);  // 503 with Retry-After
    BOOST_TEST(one.checkouts <= 1);
    checkouts += one.checkouts;
  }
  // The first key alone, then one batch of the 39 that queued behind it: two checkouts for 40
  // keys, not one more per key of the failed batch.
  BOOST_TEST(checkouts == 2);
  BOOST_TEST(calls.totals()["echo_many"].batches == 1u);
  BOOST_TEST(fallbacks(calls, rr::db::CoalescedFallback::outage) == 1u);
  BOOST_TEST(done() == "");
}

BOOST_AUTO_TEST_CASE(a_batch_failing_on_a_bug_fails_every_request_once_and_runs_none_again) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(3);
  run_queued_behind_one(calls, first, {2, 4242, 3}, got);

  for (const auto& one : got) {
    BOOST_TEST(!one.answer.has_value());
    BOOST_TEST(one.sqlstate == "42883");  // the batch's own error, a 500 at the API's edge
    BOOST_TEST(!one.outage);
  }
  BOOST_TEST(got[0].checkouts + got[1].checkouts + got[2].checkouts == 1);
  BOOST_TEST(done() == "1");
  BOOST_TEST(fallbacks(calls, rr::db::CoalescedFallback::programming_error) == 1u);
}

BOOST_AUTO_TEST_CASE(an_answer_naming_a_request_the_batch_did_not_carry_fails_every_request_and_runs_none_again) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(3);
  run_queued_behind_one(calls, first, {2, 777, 3}, got);

  for (const auto& one : got) {
    BOOST_TEST(!one.answer.has_value());
    BOOST_TEST(one.error.find("ordinal 99") != std::string::npos);
    BOOST_TEST(!one.outage);
  }
  BOOST_TEST(got[0].checkouts + got[1].checkouts + got[2].checkouts == 1);
  BOOST_TEST(done() == "1,2,3,777");  // the batch once; no single call for 777 on top
  BOOST_TEST(fallbacks(calls, rr::db::CoalescedFallback::programming_error) == 1u);
}

BOOST_AUTO_TEST_CASE(a_waiter_whose_fiber_unwinds_leaves_the_queue_and_the_next_call_runs) {
  rr::db::CoalescedCalls calls(64);
  Got first, unwound, after;
  // The first call, in flight on a thread of its own until lock 7 is released.
  std::thread leader([&] { run_fibers({request(calls, 1, first)}); });
  auto wait_for = [&](const std::string& sql) {
    for (int round = 0; round < 3000 && db.scalar(sql) != "t"; ++round) std::this_thread::sleep_for(5ms);
  };
  wait_for("SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7 AND NOT granted");
  {
    // A second call queues behind it on an I/O thread of its own, which is then destroyed with the
    // fiber suspended in the queue: its stack unwinds.
    boost::asio::io_context io;
    boost::asio::thread_pool workers(1);
    rr::fiber::spawn(io.get_executor(), workers.get_executor(), request(calls, 2, unwound));
    io.poll();
    BOOST_REQUIRE(calls.totals()["echo_many"].queued == 1u);
    io.stop();
    workers.join();
  }
  BOOST_REQUIRE(calls.totals()["echo_many"].queued == 0u);
  pqxx::nontransaction(holder).exec("SELECT pg_advisory_unlock(7), pg_advisory_unlock(8)");
  leader.join();
  BOOST_REQUIRE(first.answer.has_value());
  BOOST_TEST(first.value() == 10);
  BOOST_TEST(!unwound.answer.has_value());
  // Nothing is left in flight: the next call runs at once, alone.
  run_fibers({request(calls, 3, after)});
  BOOST_REQUIRE(after.answer.has_value());
  BOOST_TEST(after.value() == 30);
  BOOST_TEST(calls.totals()["echo_many"].batches == 0u);
  BOOST_TEST(done() == "1,3");
}

BOOST_AUTO_TEST_CASE(a_waiter_handed_the_lead_whose_fiber_unwinds_hands_it_on_and_nothing_stays_in_flight) {
  rr::db::CoalescedCalls calls(64);
  Got first, unwound, after;
  std::optional<boost::asio::io_context> io(std::in_place);
  boost::asio::thread_pool workers(1);
  {
    // A second call queues behind the first on an I/O thread that is not run again: handed the
    // lead when the first returns, it never takes it.
    std::thread leader([&] { run_fibers({request(calls, 1, first)}); });
    for (int round = 0; round < 3000; ++round) {
      if (db.scalar("SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7 AND NOT granted") ==
          "t") {
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    rr::fiber::spawn(io->get_executor(), workers.get_executor(), request(calls, 2, unwound));
    io->poll();
    BOOST_REQUIRE(calls.totals()["echo_many"].queued == 1u);
    pqxx::nontransaction(holder).exec("SELECT pg_advisory_unlock(7), pg_advisory_unlock(8)");
    leader.join();
  }
  BOOST_REQUIRE(first.answer.has_value());
  BOOST_TEST(calls.totals()["echo_many"].queued == 0u);  // handed the lead, off the queue
  // Its I/O thread ends with the fiber suspended: the stack unwinds and the lead passes on.
  workers.join();
  io.reset();
  BOOST_TEST(!unwound.answer.has_value());
  run_fibers({request(calls, 3, after)});
  BOOST_REQUIRE(after.answer.has_value());
  BOOST_TEST(after.value() == 30);
  BOOST_TEST(done() == "1,3");
}

BOOST_AUTO_TEST_CASE(a_lost_connection_reaches_every_request_of_its_batch_and_no_other) {
  rr::db::CoalescedCalls calls(64);
  Got first;
  std::vector<Got> got(3);
  run_fibers(queued_behind_one(calls, 1, first, {2, 3, 4}, got, interrupt_the_batch("pg_terminate_backend")));

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

BOOST_AUTO_TEST_CASE(two_in_flight_run_side_by_side_and_the_calls_after_them_queue_for_a_batch) {
  rr::db::CoalescedCalls calls(64, 2);
  holder_exec("SELECT pg_advisory_unlock(8)");
  Got first, second;
  std::vector<Got> got(3);
  std::vector<std::function<void()>> bodies{request(calls, 1, first), request(calls, 2, second)};
  for (std::size_t i = 0; i < got.size(); ++i) bodies.push_back(request(calls, static_cast<int>(i) + 3, got[i]));
  bodies.push_back([&] {
    // Both first calls reached PostgreSQL (each waits there for lock 7); only the three after them queue.
    BOOST_TEST(calls.totals()["echo_many"].queued == 3u);
    // This database's waiters only: pg_locks lists every database's, and a run that was killed
    // leaves its backends waiting a moment.
    wait_until_true(
        "SELECT count(*) = 2 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7 AND NOT granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())");
    holder_exec("SELECT pg_advisory_unlock(7)");
  });
  run_fibers(bodies);

  BOOST_REQUIRE(first.answer.has_value());
  BOOST_REQUIRE(second.answer.has_value());
  BOOST_TEST(first.value() == 10);
  BOOST_TEST(second.value() == 20);
  for (std::size_t i = 0; i < got.size(); ++i) {
    BOOST_REQUIRE(got[i].answer.has_value());
    BOOST_TEST(got[i].value() == static_cast<int>(i + 3) * 10);
  }
  auto totals = calls.totals()["echo_many"];
  // Each of the two that end hands the lead on: the first led takes the queue (one batch of
  // three), unless the second was handed the lead before it ran (a batch of two and one alone).
  BOOST_TEST(totals.batches == 1u);
  BOOST_TEST((totals.batched_calls == 2u || totals.batched_calls == 3u));
  BOOST_TEST(totals.queued == 0u);
  BOOST_TEST(done() == "1,2,3,4,5");
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
