// The generic runner with a flow that is not about rides: it must know only keys, locks,
// recovery points and phase results, and unlock the key on failures.
#include <boost/test/unit_test.hpp>
#include <functional>
#include <future>
#include <vector>

#include "common/idempotency/key_acquisition.hpp"
#include "common/idempotency/phase_runner.hpp"
#include "support/fibers.hpp"
#include "support/test_database.hpp"

namespace idem = rr::idempotency;
using rr::test::TestDatabase;
using namespace std::chrono_literals;

namespace {

bool is(const idem::Outcome& outcome, idem::Outcome::Kind kind) { return outcome.kind == kind; }

struct RunnerFixture {
  TestDatabase db;
  rr::db::ConnectionPool pool{db.url(), db.session_options(), 4, std::chrono::seconds(5)};
  std::int64_t user_id = 0;

  RunnerFixture() {
    pqxx::work tx(db.conn());
    user_id =
        tx.exec("INSERT INTO users (email, stripe_customer_id) VALUES ('u@example.com', 'cus') RETURNING id")[0][0]
            .as<std::int64_t>();
    tx.commit();
  }

  // A key stored and locked on its own, before any phase ran.
  idem::KeyRow lock_new_key(const std::string& path = "/things") {
    auto result = idem::begin_key(pool.acquire(), {user_id, "generic-key-000000000001", "POST", path, "{\"n\":1}", ""},
                                  std::chrono::seconds(90));
    BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(result));
    auto& acquired = std::get<idem::Acquired>(result);
    BOOST_REQUIRE(acquired.section != nullptr);
    acquired.section->tx.commit();
    return acquired.key;
  }

  // The request path: the key is created in a transaction left open for the first phase.
  idem::Acquired begin_new_key(rr::db::ConnectionPool& from) {
    auto result = idem::begin_key(from.acquire(), {user_id, "generic-key-000000000002", "POST", "/things", "{}", ""},
                                  std::chrono::seconds(90));
    BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(result));
    auto acquired = std::move(std::get<idem::Acquired>(result));
    BOOST_REQUIRE(acquired.created);
    BOOST_REQUIRE(acquired.section != nullptr);
    return acquired;
  }

  std::string keys() { return db.scalar("SELECT count(*) FROM idempotency_keys"); }

  idem::KeyRequest tip_request() const {
    return {user_id, "review-key-0000000000001", "POST", "/tips", "{\"amount\":100}", ""};
  }
};

// A two-phase flow that writes to a table of its own.
idem::Flow counting_flow(int& calls) {
  return {
      {"started", idem::local_phase([&calls](idem::PhaseContext& ctx) {
         ++calls;
         return ctx.atomic([](rr::db::Transaction& tx) -> idem::PhaseResult {
           tx.exec("CREATE TABLE IF NOT EXISTS things (n int)");
           tx.exec("INSERT INTO things VALUES (1)");
           return idem::RecoveryPoint{"thing_made"};
         });
       })},
      {"thing_made",
       [&calls](idem::PhaseContext& ctx) {
         ++calls;
         return ctx.atomic([](rr::db::Transaction&) -> idem::PhaseResult {
           return idem::FinalResult{200, "{\"ok\":true}"};
         });
       }},
  };
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(phase_runner, RunnerFixture)

BOOST_AUTO_TEST_CASE(a_flow_that_is_not_about_rides_runs_to_its_response) {
  int calls = 0;
  auto flow = counting_flow(calls);
  idem::PhaseRunner runner(pool);
  auto outcome = runner.run(flow, lock_new_key());
  BOOST_TEST(is(outcome, idem::Outcome::Kind::finished));
  BOOST_TEST(outcome.result.code == 200);
  BOOST_TEST(outcome.result.body == "{\"ok\":true}");
  BOOST_TEST(calls == 2);
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || response_body || ' ' || (locked_at IS NULL) FROM "
                       "idempotency_keys") == "finished {\"ok\":true} true");
}

BOOST_AUTO_TEST_CASE(an_internal_error_unlocks_the_key_and_keeps_the_last_recovery_point) {
  idem::Flow flow = {
      {"started",
       [](idem::PhaseContext& ctx) {
         return ctx.atomic([](rr::db::Transaction&) -> idem::PhaseResult { return idem::RecoveryPoint{"half_way"}; });
       }},
      {"half_way", [](idem::PhaseContext&) -> idem::PhaseResult { throw std::runtime_error("bug in phase"); }},
  };
  idem::PhaseRunner runner(pool);
  auto outcome = runner.run(flow, lock_new_key());
  BOOST_TEST(static_cast<int>(outcome.kind) == static_cast<int>(idem::Outcome::Kind::failed));
  BOOST_TEST(is(outcome, idem::Outcome::Kind::failed));
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || (locked_at IS NULL) || ' ' || (lock_token IS NULL) FROM "
                       "idempotency_keys") == "half_way true true");
}

BOOST_AUTO_TEST_CASE(an_error_inside_an_atomic_section_rolls_back_its_writes) {
  idem::Flow flow = {
      {"started",
       [](idem::PhaseContext& ctx) {
         return ctx.atomic([](rr::db::Transaction& tx) -> idem::PhaseResult {
           tx.exec("INSERT INTO staged_jobs (job_name, job_args) VALUES ('leak', '[]')");
           throw std::runtime_error("fails after writing");
         });
       }},
  };
  idem::PhaseRunner runner(pool);
  runner.run(flow, lock_new_key());
  BOOST_TEST(db.scalar("SELECT count(*) FROM staged_jobs") == "0");
  BOOST_TEST(db.scalar("SELECT recovery_point FROM idempotency_keys") == "started");
}

BOOST_AUTO_TEST_CASE(serialization_failures_are_retried_then_answered_409_with_the_key_unlocked) {
  int attempts = 0;
  idem::Flow flow = {
      {"started",
       [&attempts](idem::PhaseContext& ctx) {
         return ctx.atomic([&attempts](rr::db::Transaction&) -> idem::PhaseResult {
           ++attempts;
           throw pqxx::serialization_failure("could not serialize access");
         });
       }},
  };
  idem::RunnerOptions options;
  options.max_serialization_retries = 3;
  options.retry_jitter = std::chrono::milliseconds(1);
  idem::PhaseRunner runner(pool, options);
  auto outcome = runner.run(flow, lock_new_key());
  BOOST_TEST(attempts == 4);
  BOOST_TEST(is(outcome, idem::Outcome::Kind::conflict));
  BOOST_TEST(runner.serialization_retries() == 3u);
  BOOST_TEST(db.scalar("SELECT locked_at IS NULL FROM idempotency_keys") == "t");
}

BOOST_AUTO_TEST_CASE(a_serialization_failure_that_clears_on_retry_is_invisible_to_the_client) {
  int attempts = 0;
  idem::Flow flow = {
      {"started",
       [&attempts](idem::PhaseContext& ctx) {
         return ctx.atomic([&attempts](rr::db::Transaction&) -> idem::PhaseResult {
           if (++attempts < 3) throw pqxx::serialization_failure("could not serialize access");
           return idem::FinalResult{201, "{}"};
         });
       }},
  };
  idem::PhaseRunner runner(pool);
  BOOST_TEST(runner.run(flow, lock_new_key()).result.code == 201);
}

BOOST_AUTO_TEST_CASE(a_phase_that_makes_no_progress_is_an_internal_error_not_a_loop) {
  idem::Flow flow = {
      {"started",
       [](idem::PhaseContext& ctx) {
         return ctx.atomic([](rr::db::Transaction&) -> idem::PhaseResult { return idem::NoOp{}; });
       }},
  };
  idem::PhaseRunner runner(pool);
  BOOST_TEST(is(runner.run(flow, lock_new_key()), idem::Outcome::Kind::failed));
}

BOOST_AUTO_TEST_CASE(the_same_key_on_another_path_is_a_mismatch) {
  lock_new_key("/things");
  auto result =
      idem::begin_key(pool.acquire(), {user_id, "generic-key-000000000001", "POST", "/other", "{\"n\":1}", ""},
                      std::chrono::seconds(90));
  BOOST_TEST(std::holds_alternative<idem::Mismatch>(result));
}

BOOST_AUTO_TEST_CASE(a_new_key_and_its_first_phase_commit_together_or_not_at_all) {
  idem::Flow failing = {
      {"started", idem::local_phase([](idem::PhaseContext& ctx) {
         return ctx.atomic([](rr::db::Transaction& tx) -> idem::PhaseResult {
           tx.exec("INSERT INTO staged_jobs (job_name, job_args) VALUES ('first-phase', '[]')");
           throw std::runtime_error("fails after writing");
         });
       })},
  };
  idem::PhaseRunner runner(pool);
  auto first = begin_new_key(pool);
  BOOST_TEST(keys() == "0");  // not committed yet: nobody else sees the key
  auto outcome = runner.run(failing, std::move(first.key), std::move(first.section));
  BOOST_TEST(is(outcome, idem::Outcome::Kind::failed));
  // The key went with the phase's work: a retry starts from scratch, as if nothing happened.
  BOOST_TEST(keys() == "0");
  BOOST_TEST(db.scalar("SELECT count(*) FROM staged_jobs") == "0");

  int calls = 0;
  auto retry = begin_new_key(pool);
  idem::RunnerOptions options;
  std::string seen_at_first_commit;
  options.after_commit = [&](const std::string& point) {
    if (point == "thing_made") {
      seen_at_first_commit =
          db.scalar("SELECT recovery_point || ' ' || (SELECT count(*) FROM things) FROM idempotency_keys");
    }
  };
  idem::PhaseRunner observed(pool, options);
  BOOST_TEST(observed.run(counting_flow(calls), std::move(retry.key), std::move(retry.section)).result.code == 200);
  BOOST_TEST(seen_at_first_commit == "thing_made 1");
  BOOST_TEST(db.scalar("SELECT recovery_point FROM idempotency_keys") == "finished");
}

BOOST_AUTO_TEST_CASE(a_crash_inside_the_first_phase_leaves_no_key_behind) {
  idem::Flow crashing = {
      {"started", idem::local_phase([](idem::PhaseContext& ctx) {
         return ctx.atomic(
             [](rr::db::Transaction&) -> idem::PhaseResult { throw idem::SimulatedCrash{"died mid-phase"}; });
       })},
  };
  idem::PhaseRunner runner(pool);
  auto acquired = begin_new_key(pool);
  BOOST_CHECK_THROW(runner.run(crashing, std::move(acquired.key), std::move(acquired.section)), idem::SimulatedCrash);
  // Unlike a crash after a commit, there is no lock to wait out: the key never existed.
  BOOST_TEST(keys() == "0");
}

BOOST_AUTO_TEST_CASE(a_new_key_needs_one_connection_per_phase_not_two) {
  // With a pool of one, a second checkout while the creating transaction is open would time out.
  rr::db::ConnectionPool one{db.url(), db.session_options(), 1, std::chrono::milliseconds(500)};
  int calls = 0;
  idem::PhaseRunner runner(one);
  auto acquired = begin_new_key(one);
  BOOST_TEST(runner.run(counting_flow(calls), std::move(acquired.key), std::move(acquired.section)).result.code == 200);
  BOOST_TEST(calls == 2);
  BOOST_TEST(one.stats().in_use == 0u);
}

BOOST_AUTO_TEST_CASE(begin_key_answers_a_finished_key_as_a_replay_and_keeps_no_transaction_open) {
  int calls = 0;
  idem::PhaseRunner runner(pool);
  auto acquired = begin_new_key(pool);
  runner.run(counting_flow(calls), std::move(acquired.key), std::move(acquired.section));
  rr::db::ConnectionPool one{db.url(), db.session_options(), 1, std::chrono::milliseconds(500)};
  auto again = idem::begin_key(one.acquire(), {user_id, "generic-key-000000000002", "POST", "/things", "{}", ""},
                               std::chrono::seconds(90));
  BOOST_REQUIRE(std::holds_alternative<idem::Replay>(again));
  BOOST_TEST(std::get<idem::Replay>(again).body == "{\"ok\":true}");
  BOOST_TEST(one.stats().in_use == 0u);
  // The connection went back without a transaction left open on it.
  auto conn = one.acquire();
  pqxx::work tx(conn.conn());
  BOOST_TEST(tx.exec("SELECT 1")[0][0].as<int>() == 1);
}

// From review: two requests with one new key at once. The second blocks on the first's
// uncommitted INSERT, then sees the committed key; no connection stays checked out.
BOOST_AUTO_TEST_CASE(concurrent_begin_key_on_one_new_key_lets_exactly_one_proceed) {
  std::promise<void> first_inserted;
  std::promise<void> release_first;
  auto release = release_first.get_future().share();
  idem::Flow slow = {
      {"started", idem::local_phase([&](idem::PhaseContext& ctx) {
         return ctx.atomic([&](rr::db::Transaction&) -> idem::PhaseResult {
           first_inserted.set_value();
           release.wait();
           return idem::RecoveryPoint{"done_something"};
         });
       })},
      {"done_something",
       [](idem::PhaseContext& ctx) {
         return ctx.atomic([](rr::db::Transaction&) -> idem::PhaseResult { return idem::FinalResult{201, "{}"}; });
       }},
  };
  idem::PhaseRunner runner(pool);
  auto a = std::async(std::launch::async, [&] {
    auto result = idem::begin_key(pool.acquire(), tip_request(), std::chrono::seconds(90));
    auto& acquired = std::get<idem::Acquired>(result);
    return runner.run(slow, std::move(acquired.key), std::move(acquired.section)).result.code;
  });
  first_inserted.get_future().wait();
  auto b = std::async(std::launch::async,
                      [&] { return idem::begin_key(pool.acquire(), tip_request(), std::chrono::seconds(90)); });
  BOOST_TEST((b.wait_for(300ms) == std::future_status::timeout));  // blocked on the uncommitted insert
  release_first.set_value();
  auto b_result = b.get();
  // In flight, or already finished if the first request's last phase won the race.
  BOOST_TEST((std::holds_alternative<idem::InFlight>(b_result) || std::holds_alternative<idem::Replay>(b_result)));
  BOOST_TEST(a.get() == 201);
  BOOST_TEST(pool.stats().in_use == 0u);
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "1");
}

BOOST_AUTO_TEST_CASE(a_first_phase_that_is_not_local_finds_its_key_committed_before_it_runs) {
  // A first phase that calls the provider (a tip, a refund) must not send a payment key that could
  // still roll back, nor hold the creating transaction open across the call: not being declared
  // local, it finds its key committed, and a retry after a lost answer reuses the payment key.
  std::vector<std::string> provider_saw;  // the idempotency keys the "provider" received
  std::vector<std::string> visible_to_others;
  idem::Flow provider_first = {
      {"started",
       [&](idem::PhaseContext& ctx) -> idem::PhaseResult {
         visible_to_others.push_back(db.scalar("SELECT count(*) FROM idempotency_keys"));
         provider_saw.push_back(ctx.key().payment_idempotency_key);
         // The charge went through, but its answer was lost (a timeout): retry later.
         throw idem::TransientFailure(idem::RetryReason::unavailable, "provider timed out", 1);
       }},
  };
  idem::PhaseRunner runner(pool);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto result = idem::begin_key(pool.acquire(), tip_request(), std::chrono::seconds(90));
    BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(result));
    auto& acquired = std::get<idem::Acquired>(result);
    auto outcome = runner.run(provider_first, std::move(acquired.key), std::move(acquired.section));
    BOOST_TEST(is(outcome, idem::Outcome::Kind::transient));
    BOOST_TEST((outcome.retry_reason == idem::RetryReason::unavailable));
  }
  BOOST_REQUIRE(provider_saw.size() == 2u);
  BOOST_TEST(provider_saw[0] == provider_saw[1]);  // the retry must reuse the payment key
  // No database transaction held open across the call: the key is stored before it.
  BOOST_TEST(visible_to_others[0] == "1");
}

// One round trip per phase, with a flow that is not about rides: its own SQL functions
// create the key with the first phase's work, and finish it with the second phase's.
struct OneTripFlowFixture : RunnerFixture {
  OneTripFlowFixture() {
    pqxx::work tx(db.conn());
    tx.exec(R"sql(
      CREATE TABLE things (n int);
      CREATE FUNCTION things_create_with_key(p_user_id bigint, p_key text, p_lock_token uuid)
      RETURNS TABLE (inserted boolean, id bigint, user_id bigint, recovery_point text, lock_token text,
                     request_params text, origin_ip text, payment_idempotency_key text, response_code int,
                     response_body text, same_request boolean, locked boolean, thing int)
      LANGUAGE plpgsql AS $$
      DECLARE v record;
      BEGIN
        -- A new key is inserted where its first phase leaves it, together with that phase's work.
        SELECT * INTO v FROM idem_find_or_create_at(p_user_id, p_key, 'POST', '/things', '{}'::jsonb, '', p_lock_token, 90,
                                                    'thing_made');
        IF NOT FOUND THEN RETURN; END IF;
        IF v.inserted THEN
          INSERT INTO things VALUES (7);
        END IF;
        RETURN QUERY SELECT v.inserted, v.id, v.user_id, v.recovery_point, v.lock_token, v.request_params, v.origin_ip,
                            v.payment_idempotency_key, v.response_code, v.response_body, v.same_request, v.locked,
                            CASE WHEN v.inserted THEN 7 END;
      END $$;
      CREATE FUNCTION things_write_and_finish(p_key_id bigint, p_lock_token uuid, p_body text, p_missing boolean)
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO things VALUES (1);
        IF p_missing THEN RAISE EXCEPTION 'no thing for key %', p_key_id USING ERRCODE = 'RR002'; END IF;
        PERFORM idem_finish_or_raise(p_key_id, p_lock_token, 200, p_body);
      END $$;
    )sql");
    tx.commit();
  }

  idem::CreatingCall creating = [](const idem::KeyRequest& request, const std::string& token, double) {
    return rr::db::call("things_create_with_key", request.user_id, request.idempotency_key, token);
  };
  idem::KeyRequest request() const { return {user_id, "one-trip-key-00000000001", "POST", "/things", "{}", ""}; }

  // The second phase: one call that writes a thing and stores the response, fenced. `before` runs
  // first (a takeover, say).
  idem::Flow one_trip_flow(bool missing, std::function<void()> before = {}, int* carried_thing = nullptr) {
    return {{"thing_made", [=](idem::PhaseContext& ctx) -> idem::PhaseResult {
               if (before) before();
               const auto& carried = ctx.carried();
               if (carried_thing && carried.row) *carried_thing = (*carried.row)[carried.first_column].as<int>();
               idem::FinalResult done{200, "{\"made\":true}"};
               ctx.atomic_call(
                   rr::db::call("things_write_and_finish", ctx.key().id, ctx.key().lock_token, done.body, missing),
                   done);
               return done;
             }}};
  }

  idem::KeyRow lock_key_at_thing_made() {
    auto key = lock_new_key();
    db.scalar("UPDATE idempotency_keys SET recovery_point = 'thing_made' RETURNING id");
    key.recovery_point = "thing_made";
    return key;
  }
};

BOOST_FIXTURE_TEST_CASE(a_creating_call_creates_the_key_with_its_first_phase_and_carries_its_columns,
                        OneTripFlowFixture) {
  auto result = idem::begin_key(pool.acquire(), request(), 90s, &creating);
  BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(result));
  auto acquired = std::move(std::get<idem::Acquired>(result));
  BOOST_TEST(acquired.created);
  BOOST_TEST(acquired.section == nullptr);  // committed already: nothing held open
  BOOST_TEST(acquired.key.recovery_point == "thing_made");
  BOOST_TEST(db.scalar("SELECT string_agg(n::text, ',') FROM things") == "7");
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || (lock_token IS NOT NULL) FROM idempotency_keys") ==
             "thing_made true");

  std::vector<std::string> commits;
  int carried_thing = 0;
  idem::RunnerOptions options;
  options.after_commit = [&](const std::string& point) { commits.push_back(point); };
  idem::PhaseRunner runner(pool, options);
  auto outcome = runner.run(one_trip_flow(false, {}, &carried_thing), std::move(acquired.key), nullptr,
                            std::move(acquired.carried));
  BOOST_TEST(is(outcome, idem::Outcome::Kind::finished));
  BOOST_TEST(outcome.result.body == "{\"made\":true}");
  BOOST_TEST(carried_thing == 7);
  // The hook sees the creating call's commit as a phase's, then the second phase's.
  BOOST_TEST(commits == (std::vector<std::string>{"thing_made", "finished"}), boost::test_tools::per_element());
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || response_body || ' ' || (lock_token IS NULL) FROM "
                       "idempotency_keys") == "finished {\"made\":true} true");

  // The same key again: the same call finds it finished, in one round trip, and writes nothing.
  auto again = idem::begin_key(pool.acquire(), request(), 90s, &creating);
  BOOST_REQUIRE(std::holds_alternative<idem::Replay>(again));
  BOOST_TEST(std::get<idem::Replay>(again).body == "{\"made\":true}");
  BOOST_TEST(db.scalar("SELECT count(*) FROM things") == "2");
}

BOOST_FIXTURE_TEST_CASE(a_call_that_finds_its_lock_taken_over_writes_nothing_and_stops, OneTripFlowFixture) {
  auto key = lock_key_at_thing_made();
  auto take_over = [this] { db.scalar("UPDATE idempotency_keys SET lock_token = gen_random_uuid() RETURNING id"); };
  idem::PhaseRunner runner(pool);
  auto outcome = runner.run(one_trip_flow(false, take_over), key);
  BOOST_TEST(is(outcome, idem::Outcome::Kind::lock_lost));
  BOOST_TEST(db.scalar("SELECT count(*) FROM things") == "0");
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || (response_code IS NULL) FROM idempotency_keys") ==
             "thing_made true");
}

BOOST_FIXTURE_TEST_CASE(a_call_that_raises_a_missing_row_fails_unlocked_with_nothing_written, OneTripFlowFixture) {
  auto key = lock_key_at_thing_made();
  idem::PhaseRunner runner(pool);
  auto outcome = runner.run(one_trip_flow(true), key);
  BOOST_TEST(is(outcome, idem::Outcome::Kind::failed));
  BOOST_TEST(db.scalar("SELECT count(*) FROM things") == "0");
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || (lock_token IS NULL) FROM idempotency_keys") ==
             "thing_made true");
}

BOOST_FIXTURE_TEST_CASE(a_hook_failing_after_a_creating_call_fails_the_run_with_the_key_unlocked, OneTripFlowFixture) {
  auto result = idem::begin_key(pool.acquire(), request(), 90s, &creating);
  BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(result));
  auto acquired = std::move(std::get<idem::Acquired>(result));
  idem::RunnerOptions options;
  options.after_commit = [](const std::string& point) { throw std::runtime_error("hook failed at " + point); };
  idem::PhaseRunner runner(pool, options);
  auto outcome = runner.run(one_trip_flow(false), std::move(acquired.key), nullptr, std::move(acquired.carried));
  BOOST_TEST(is(outcome, idem::Outcome::Kind::failed));
  BOOST_TEST(outcome.message == "hook failed at thing_made");
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || (lock_token IS NULL) FROM idempotency_keys") ==
             "thing_made true");
}

// The fault suite found this as a use after free of an exception object: the runner released
// a failed key's lock inside its catch clause, and on a request fiber that release suspends (a
// pool checkout, a round trip); another fiber catching its own exception on the same thread
// meanwhile corrupted the thread's stack of exceptions being handled. Two fibers fail at once here,
// each releasing its key: under ASan the old runner fails this test.
BOOST_AUTO_TEST_CASE(two_fibers_failing_at_once_on_one_thread_each_release_their_key) {
  idem::PhaseRunner runner(pool);
  idem::Flow failing = {
      {"started",
       [](idem::PhaseContext&) -> idem::PhaseResult {
         throw idem::TransientFailure(idem::RetryReason::unavailable, "provider down", 1);
       }},
  };
  std::vector<idem::KeyRow> keys;
  for (const char* name : {"fiber-failure-key-00000001", "fiber-failure-key-00000002"}) {
    auto result =
        idem::begin_key(pool.acquire(), {user_id, name, "POST", "/things", "{}", ""}, std::chrono::seconds(90));
    BOOST_REQUIRE(std::holds_alternative<idem::Acquired>(result));
    auto& acquired = std::get<idem::Acquired>(result);
    acquired.section->tx.commit();
    keys.push_back(acquired.key);
  }
  std::vector<idem::Outcome> outcomes(2);
  rr::testing::run_fibers(
      {[&] { outcomes[0] = runner.run(failing, keys[0]); }, [&] { outcomes[1] = runner.run(failing, keys[1]); }});
  for (const auto& outcome : outcomes) {
    BOOST_TEST(is(outcome, idem::Outcome::Kind::transient));
    BOOST_TEST(outcome.message == "provider down");
  }
  // Both locks were released: the keys are free for the client's retry.
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys WHERE locked_at IS NULL AND idempotency_key LIKE "
                       "'fiber-failure-key-%'") == "2");
}

BOOST_AUTO_TEST_SUITE_END()
