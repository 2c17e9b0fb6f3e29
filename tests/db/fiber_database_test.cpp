// The database leaves on a request fiber: a one-trip call sent with libpq's
// asynchronous API suspends the fiber on the socket, and a pool checkout suspends it on a waker,
// so the I/O thread serves other fibers meanwhile. Rows, errors (as the same libpqxx exception
// types) and broken connections come out as off a fiber. No timing assertions: the order of
// events proves a suspension. The suite also runs through a transaction-pooling PgBouncer.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/db/connection.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/db/outage.hpp"
#include "common/db/transaction.hpp"
#include "common/fiber/fiber.hpp"
#include "support/fibers.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::testing::run_fibers;

namespace {

struct FiberDatabaseFixture {
  rr::test::TestDatabase db{/*migrated=*/false};
  rr::db::Connection conn{db.url()};

  FiberDatabaseFixture() {
    pqxx::work tx(db.conn());
    tx.exec(R"sql(
      CREATE FUNCTION echo(a text, b text, c bigint, d boolean)
        RETURNS TABLE (a text, b text, c bigint, d boolean, timeout text)
        LANGUAGE sql AS $$ SELECT a, b, c, d, current_setting('statement_timeout') $$;
      CREATE FUNCTION numbers(n int) RETURNS TABLE (i int) LANGUAGE sql AS $$ SELECT generate_series(1, n) $$;
      CREATE FUNCTION nothing() RETURNS void LANGUAGE sql AS $$ SELECT $$;
      CREATE FUNCTION raise_sqlstate(sqlstate text) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'raised %', sqlstate USING ERRCODE = sqlstate;
      END $$;
      CREATE FUNCTION sleep_for(seconds float8) RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(seconds) $$;
      CREATE FUNCTION sleep_until_terminated() RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(30) $$;
      CREATE FUNCTION take_advisory_lock(k bigint) RETURNS text LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock(k);
        RETURN 'locked ' || k;
      END $$;
    )sql");
    tx.commit();
  }

  std::string scalar_from_worker(const std::string& sql) { return rr::testing::scalar_from_worker(db, sql); }
  void wait_until_true(const std::string& sql) { rr::testing::wait_until_true(db, sql); }
};

// Suspends the fiber until `count` checkouts wait on `pool`; bounded so that a checkout blocking
// the I/O thread fails the test instead of hanging it.
void wait_for_waiters(rr::db::ConnectionPool& pool, std::size_t count) {
  for (int round = 0; round < 10000; ++round) {
    if (pool.stats().waiting >= count) return;
    rr::fiber::sleep_for(1ms);
  }
  BOOST_FAIL("fewer than " + std::to_string(count) + " checkouts ever waited");
}

// What /proc names the socket behind `fd` ("socket:[inode]"): the same for every descriptor of it.
std::string socket_behind(int fd) {
  std::error_code ec;
  auto name = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
  BOOST_REQUIRE(name.rfind("socket:", 0) == 0);
  return name;
}

// How many of this process's descriptors name `socket` (libpq's own, and a kept watch's dup of
// it): 0 once every one is closed.
int descriptors_of(const std::string& socket) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path(), ec).string() == socket) ++count;
  }
  return count;
}

std::vector<std::vector<std::optional<std::string>>> as_text(const rr::db::Result& rows) {
  std::vector<std::vector<std::optional<std::string>>> text;
  for (const auto& row : rows) {
    auto& fields = text.emplace_back();
    for (const auto& field : row) {
      fields.push_back(field.is_null() ? std::nullopt : std::optional<std::string>(field.c_str()));
    }
  }
  return text;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(fiber_database, FiberDatabaseFixture)

BOOST_AUTO_TEST_CASE(a_call_on_a_fiber_returns_the_rows_a_call_off_a_fiber_returns) {
  const std::string nasty = "it's a \\'quote'' ; -- \xc3\xa9\xe2\x82\xac";
  auto echo = rr::db::call("echo", nasty, std::optional<std::string>{}, -42, true);
  auto off_fiber = rr::db::run_one_trip(conn, echo, 1500ms);
  auto off_numbers = rr::db::run_one_trip(conn, rr::db::call("numbers", 3), 0ms);
  std::optional<rr::db::Result> on_fiber, on_numbers, none, empty;
  run_fibers({[&] {
    on_fiber = rr::db::run_one_trip(conn, echo, 1500ms);
    on_numbers = rr::db::run_one_trip(conn, rr::db::call("numbers", 3), 0ms);
    none = rr::db::run_one_trip(conn, rr::db::call("nothing"), 0ms);
    empty = rr::db::run_one_trip(conn, rr::db::call("numbers", 0), 0ms);
  }});
  BOOST_REQUIRE(on_fiber.has_value());
  BOOST_TEST(on_fiber->size() == 1u);
  BOOST_TEST((as_text(*on_fiber) == as_text(off_fiber)));
  BOOST_TEST((*on_fiber)[0][0].as<std::string>() == nasty);
  BOOST_TEST((*on_fiber)[0][1].is_null());
  BOOST_TEST((*on_fiber)[0][2].as<std::int64_t>() == -42);
  BOOST_TEST((*on_fiber)[0]["d"].as<bool>() == true);  // columns by name, as from pqxx
  BOOST_TEST((as_text(*on_numbers) == as_text(off_numbers)));
  BOOST_TEST(on_numbers->size() == 3u);
  BOOST_TEST(none->size() == 1u);   // a void function: one row with an empty value
  BOOST_TEST(empty->size() == 0u);  // no rows, still a tuples result with its columns
  BOOST_TEST(empty->columns() == 1u);

  // libpqxx gets its connection back in blocking mode, usable for a transaction at once.
  BOOST_TEST(PQisnonblocking(conn.session()) == 0);
  pqxx::work tx(conn);
  BOOST_TEST(tx.exec("SELECT 41 + 1")[0][0].as<int>() == 42);
  tx.commit();
}

BOOST_AUTO_TEST_CASE(the_two_statement_query_returns_the_selects_rows_under_its_bound) {
  std::optional<rr::db::Result> rows;
  run_fibers({[&] { rows = rr::db::run_one_trip(conn, rr::db::call("echo", "a", "b", 1, false), 1500ms); }});
  BOOST_REQUIRE(rows.has_value());
  BOOST_TEST(rows->size() == 1u);
  BOOST_TEST((*rows)[0][4].as<std::string>() == "1500ms");  // SET LOCAL ran first, in the same call
  BOOST_TEST((*rows)[0][0].as<std::string>() == "a");
  pqxx::nontransaction plain(conn);
  BOOST_TEST(plain.exec("SHOW statement_timeout")[0][0].as<std::string>() == "0");
}

BOOST_AUTO_TEST_CASE(a_fiber_waiting_on_a_lock_leaves_the_thread_to_another_fibers_call) {
  // The test holds the lock on a session of its own, straight to PostgreSQL.
  pqxx::connection holder_conn{db.direct_url()};
  std::optional<pqxx::work> holder(std::in_place, holder_conn);
  holder->exec("SELECT pg_advisory_xact_lock(7)");
  rr::db::Connection other_conn{db.url()};

  std::vector<std::string> order;
  std::string a_result, b_result;
  run_fibers({[&] {
                order.push_back("a calls");
                // Bounded on the server: a thread blocked here would never let b release the lock,
                // and the call would fail instead of hanging the suite.
                auto rows = rr::db::run_one_trip(conn, rr::db::call("take_advisory_lock", 7), 20000ms);
                a_result = rows[0][0].as<std::string>();
                order.push_back("a done");
              },
              [&] {
                order.push_back("b starts");
                // a's call is really waiting for the lock on the server while b runs.
                wait_until_true("SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
                auto rows = rr::db::run_one_trip(other_conn, rr::db::call("echo", "b", "b", 2, true), 5000ms);
                b_result = rows[0][0].as<std::string>();
                order.push_back("b done while a waits");
                order.push_back("b releases the lock");  // before: a may resume before b does
                rr::fiber::blocking([&] { holder->commit(); });
              }});
  BOOST_TEST(order == (std::vector<std::string>{"a calls", "b starts", "b done while a waits", "b releases the lock",
                                                "a done"}),
             boost::test_tools::per_element());
  BOOST_TEST(a_result == "locked 7");
  BOOST_TEST(b_result == "b");
}

BOOST_AUTO_TEST_CASE(errors_come_out_as_the_libpqxx_types_callers_classify) {
  bool serialization = false, deadlock = false, own_sqlstate = false, timeout = false, unique = false;
  run_fibers({[&] {
    try {
      rr::db::run_one_trip(conn, rr::db::call("raise_sqlstate", "40001"), 1000ms);
    } catch (const pqxx::serialization_failure&) {
      serialization = true;
    }
    try {
      rr::db::run_one_trip(conn, rr::db::call("raise_sqlstate", "40P01"), 1000ms);
    } catch (const pqxx::deadlock_detected&) {
      deadlock = true;
    }
    try {
      rr::db::run_one_trip(conn, rr::db::call("raise_sqlstate", rr::db::kLockTakenOver), 1000ms);
    } catch (const pqxx::sql_error& e) {
      own_sqlstate = rr::db::has_sqlstate(e, rr::db::kLockTakenOver) && !rr::db::has_sqlstate(e, rr::db::kMissingRow);
      BOOST_TEST(std::string(e.what()).find("raised RR001") != std::string::npos, e.what());
      BOOST_TEST(e.query().find("raise_sqlstate") != std::string::npos);
    }
    try {
      rr::db::run_one_trip(conn, rr::db::call("raise_sqlstate", "23505"), 1000ms);
    } catch (const pqxx::unique_violation& e) {
      unique = rr::db::has_sqlstate(e, "23505");
    }
    try {
      rr::db::run_one_trip(conn, rr::db::call("sleep_for", 5), 200ms);
    } catch (const pqxx::sql_error& e) {
      timeout = rr::db::is_statement_timeout(e);
    }
    // After every error the connection is idle and serves the next call.
    auto rows = rr::db::run_one_trip(conn, rr::db::call("numbers", 2), 1000ms);
    BOOST_TEST(rows.size() == 2u);
  }});
  BOOST_TEST(serialization);
  BOOST_TEST(deadlock);
  BOOST_TEST(own_sqlstate);
  BOOST_TEST(unique);
  BOOST_TEST(timeout);
}

BOOST_AUTO_TEST_CASE(a_backend_terminated_mid_call_is_a_broken_connection_the_pool_drops) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 5s);
  bool broken = false;
  std::size_t idle_after = 99;
  std::optional<rr::db::Result> next;
  run_fibers({[&] {
                {
                  auto lease = pool.acquire();
                  try {
                    rr::db::run_one_trip(lease, rr::db::call("sleep_until_terminated"));
                  } catch (const pqxx::broken_connection&) {
                    broken = true;
                  }
                  BOOST_TEST(!lease.conn().is_open());
                }
                idle_after = pool.stats().idle;
                auto lease = pool.acquire();  // a fresh connection
                next = rr::db::run_one_trip(lease, rr::db::call("numbers", 1));
              },
              [&] {
                const std::string active_call =
                    "FROM pg_stat_activity WHERE query LIKE '%sleep_until_terminated()%' "
                    "AND query NOT LIKE '%pg_stat_activity%' AND state = 'active'";
                wait_until_true("SELECT count(*) = 1 " + active_call);
                scalar_from_worker("SELECT pg_terminate_backend(pid) " + active_call);
              }});
  BOOST_TEST(broken);
  BOOST_TEST(idle_after == 0u);
  BOOST_REQUIRE(next.has_value());
  BOOST_TEST(next->size() == 1u);
}

// DATABASE_CALL_TIMEOUT: a call that gets no answer (here it waits for a lock another session
// holds, under a statement bound of 30 s that would end it much later) fails on our side at the
// deadline as an outage, and its connection is closed and dropped, so the pool's one slot serves
// the next call on a fresh session. The holder lets go after 10 s at most, so a call that is not
// given up waits that long (and the test fails) rather than forever.
BOOST_AUTO_TEST_CASE(a_call_past_the_call_timeout_is_an_outage_and_its_connection_is_dropped) {
  pqxx::connection holder_conn{db.direct_url()};
  std::optional<pqxx::work> holder(std::in_place, holder_conn);
  holder->exec("SELECT pg_advisory_xact_lock(8)");
  std::mutex mutex;
  std::condition_variable ended;
  bool calls_done = false;
  std::thread safety_net([&] {
    std::unique_lock lock(mutex);
    ended.wait_for(lock, 10s, [&] { return calls_done; });
    holder->commit();
  });
  auto options = db.session_options();
  options.call_timeout = 400ms;
  rr::db::ConnectionPool pool(db.url(), options, 1, 5s);
  bool timed_out = false, closed = false;
  std::string outage;
  std::chrono::milliseconds waited{0};
  std::size_t idle_after = 99;
  std::optional<rr::db::Result> next;
  run_fibers({[&] {
    auto started = std::chrono::steady_clock::now();
    {
      auto lease = pool.acquire();
      try {
        rr::db::run_one_trip(lease, rr::db::call("take_advisory_lock", 8));
      } catch (const rr::db::CallTimedOut& e) {
        timed_out = true;
        outage = rr::db::outage_message(e).value_or("");
      }
      waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
      closed = !lease.conn().is_open();
    }
    idle_after = pool.stats().idle;
    auto lease = pool.acquire();  // the only slot, on a fresh session
    next = rr::db::run_one_trip(lease, rr::db::call("numbers", 2));
  }});
  {
    std::lock_guard lock(mutex);
    calls_done = true;
  }
  ended.notify_one();
  safety_net.join();
  BOOST_TEST(timed_out);
  BOOST_TEST(outage == "The database is unavailable; retry shortly.");
  BOOST_TEST(waited.count() >= 400);
  BOOST_TEST(waited.count() < 3000);
  BOOST_TEST(closed);
  BOOST_TEST(idle_after == 0u);
  BOOST_REQUIRE(next.has_value());
  BOOST_TEST(next->size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_fiber_waits_for_the_pools_only_connection_without_blocking_the_thread) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 5s);
  pool.acquire();  // opened and idle: a's checkout below takes it without a connect's suspension
  std::vector<std::string> order;
  std::size_t waiting_seen = 0;
  run_fibers({[&] {
                std::optional<rr::db::ConnectionPool::Lease> lease(pool.acquire());
                order.push_back("a holds");
                wait_for_waiters(pool, 1);
                waiting_seen = pool.stats().waiting;
                order.push_back("a releases");
                lease.reset();
              },
              [&] {
                order.push_back("b asks");
                auto lease = pool.acquire();
                order.push_back("b got it");
                BOOST_TEST(rr::db::run_one_trip(lease.conn(), rr::db::call("numbers", 1), 1000ms).size() == 1u);
              }});
  BOOST_TEST(order == (std::vector<std::string>{"a holds", "b asks", "a releases", "b got it"}),
             boost::test_tools::per_element());
  BOOST_TEST(waiting_seen == 1u);
  BOOST_TEST(pool.stats().waiting == 0u);
  BOOST_TEST(pool.stats().in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_fiber_gives_up_after_its_checkout_timeout_with_pool_exhausted) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 5s);
  pool.acquire();  // opened and idle: a's checkout below takes it without a connect's suspension
  std::vector<std::string> order;
  std::shared_ptr<rr::fiber::Waker> a_waits;
  run_fibers({[&] {
                auto lease = pool.acquire();
                order.push_back("a holds");
                a_waits = rr::fiber::Waker::for_this_fiber();
                bool woken = a_waits->wait_until(std::chrono::steady_clock::now() + 30s);
                BOOST_TEST(woken);
                a_waits.reset();  // a waker lives no longer than its fiber's I/O thread
                order.push_back("a releases");
              },
              [&] {
                order.push_back("b asks");
                try {
                  pool.acquire(50ms);
                  order.push_back("b got it");
                } catch (const rr::db::PoolExhausted&) {
                  order.push_back("b gave up");
                }
                a_waits->wake();
              },
              [&] { order.push_back("c runs while b waits"); }});
  BOOST_TEST(
      order == (std::vector<std::string>{"a holds", "b asks", "c runs while b waits", "b gave up", "a releases"}),
      boost::test_tools::per_element());
  BOOST_TEST(pool.stats().waiting == 0u);
}

BOOST_AUTO_TEST_CASE(a_waiting_thread_and_a_waiting_fiber_are_both_served) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 20s);
  pool.acquire();  // opened and idle: a's checkout below takes it without a connect's suspension
  std::vector<std::string> order;
  std::size_t waiting_seen = 0;
  bool thread_served = false, fiber_served = false;
  run_fibers({[&] {
                std::optional<rr::db::ConnectionPool::Lease> lease(pool.acquire());
                order.push_back("a holds");
                wait_for_waiters(pool, 2);
                waiting_seen = pool.stats().waiting;
                order.push_back("a releases");
                lease.reset();
              },
              [&] {
                // A worker thread blocks on the pool's condition variable.
                auto lease = rr::fiber::blocking([&] { return pool.acquire(); });
                thread_served = rr::db::run_one_trip(lease.conn(), rr::db::call("numbers", 1), 1000ms).size() == 1u;
              },
              [&] {
                auto lease = pool.acquire();
                fiber_served = rr::db::run_one_trip(lease.conn(), rr::db::call("numbers", 2), 1000ms).size() == 2u;
              }});
  BOOST_TEST(order == (std::vector<std::string>{"a holds", "a releases"}), boost::test_tools::per_element());
  BOOST_TEST(waiting_seen == 2u);
  BOOST_TEST(thread_served);
  BOOST_TEST(fiber_served);
  BOOST_TEST(pool.stats().waiting == 0u);
  BOOST_TEST(pool.stats().in_use == 0u);
}

// Under load the I/O thread's fibers run right after a release on the same thread: were a freed
// slot up for grabs, they would take every one before a waiting thread woke.
BOOST_AUTO_TEST_CASE(a_slot_goes_to_the_first_in_line_not_to_a_fiber_arriving_later) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 20s);
  pool.acquire();  // opened and idle
  std::mutex mutex;
  std::vector<std::string> order;
  auto note = [&](std::string event) {
    std::lock_guard lock(mutex);
    order.push_back(std::move(event));
  };
  std::thread waiting_thread;
  run_fibers({[&] {
    std::optional<rr::db::ConnectionPool::Lease> lease(pool.acquire());
    // A thread gets in line first...
    waiting_thread = std::thread([&] {
      auto thread_lease = pool.acquire();
      note("thread served");
    });
    wait_for_waiters(pool, 1);
    // ...then the slot is freed and, on the same thread before the waiting one could run, a
    // newcomer asks for it: it must queue behind the thread.
    lease.reset();
    auto late = pool.acquire();
    note("late fiber served");
  }});
  waiting_thread.join();
  BOOST_TEST(order == (std::vector<std::string>{"thread served", "late fiber served"}),
             boost::test_tools::per_element());
  BOOST_TEST(pool.stats().in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_fiber_connects_through_the_workers_and_off_a_fiber_nothing_changes) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 2, 5s);
  std::vector<std::string> order;
  run_fibers({[&] {
                order.push_back("a connects");
                auto lease = pool.acquire();  // the first checkout opens the connection
                order.push_back("a connected");
                BOOST_TEST(lease.conn().is_open());
              },
              [&] { order.push_back("b runs while a connects"); }});
  BOOST_TEST(order == (std::vector<std::string>{"a connects", "b runs while a connects", "a connected"}),
             boost::test_tools::per_element());
  // Off a fiber: the same pool, the same blocking checkout and the blocking call path.
  auto lease = pool.acquire();
  BOOST_TEST(rr::db::run_one_trip(lease.conn(), rr::db::call("numbers", 2), 1000ms).size() == 2u);
  BOOST_TEST(pool.stats().in_use == 1u);
}

// A pooled connection's socket is registered with the I/O thread once, not on every
// call (three epoll_ctl and an ioctl each time before). The registration is a dup of libpq's
// socket, dropped when the I/O thread's io_context shuts down and when the connection goes.
BOOST_AUTO_TEST_CASE(a_pooled_connections_socket_stays_registered_from_one_call_to_the_next) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 5s);
  std::string socket;
  { socket = socket_behind(pool.acquire().conn().sock()); }  // connected off a fiber: nothing registered
  BOOST_TEST(descriptors_of(socket) == 1);
  std::vector<std::size_t> sizes;
  long made = 0;
  int during = 0;
  run_fibers({[&] {
    auto lease = pool.acquire();
    for (int n = 1; n <= 3; ++n) sizes.push_back(rr::db::run_one_trip(lease, rr::db::call("numbers", n)).size());
    made = lease.pooled().socket_watch().registrations_made();
    during = descriptors_of(socket);
  }});
  BOOST_TEST(sizes == (std::vector<std::size_t>{1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(made == 1);
  BOOST_TEST(during == 2);  // libpq's socket and the registration's dup
  // That I/O thread's io_context is gone, and took the registration with it.
  BOOST_TEST(descriptors_of(socket) == 1);

  // Another I/O thread registers afresh and is answered; a connection the pool drops closes the dup.
  std::optional<rr::db::Result> rows;
  run_fibers({[&] {
    auto lease = pool.acquire();
    rows = rr::db::run_one_trip(lease, rr::db::call("numbers", 4));
    made = lease.pooled().socket_watch().registrations_made();
  }});
  BOOST_REQUIRE(rows.has_value());
  BOOST_TEST(rows->size() == 4u);
  BOOST_TEST(made == 2);
}

// libpqxx 6 can reopen a connection object in place; the new socket often gets the very number
// the old one had. A registration by number would wait on the dead socket; the watch tells the
// connections apart (PGconn and server process) and registers the new one.
BOOST_AUTO_TEST_CASE(a_reopened_connection_behind_the_same_socket_number_is_registered_afresh) {
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 5s);
  std::string old_socket, new_socket;
  int old_number = -1, new_number = -1, old_copies = -1, new_copies = -1;
  long made = 0;
  std::optional<rr::db::Result> rows;
  run_fibers({[&] {
    auto lease = pool.acquire();
    rr::db::run_one_trip(lease, rr::db::call("numbers", 1));
    old_number = lease.conn().sock();
    old_socket = socket_behind(old_number);
    rr::fiber::blocking([&] {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      lease.conn().deactivate();
      lease.conn().activate();
#pragma GCC diagnostic pop
    });
    new_number = lease.conn().sock();
    new_socket = socket_behind(new_number);
    rows = rr::db::run_one_trip(lease, rr::db::call("numbers", 2));
    made = lease.pooled().socket_watch().registrations_made();
    new_copies = descriptors_of(new_socket);
    old_copies = descriptors_of(old_socket);  // the old registration's dup went with it
  }});
  BOOST_TEST(old_socket != new_socket);
  BOOST_TEST_MESSAGE("socket number before and after reopening: " << old_number << ", " << new_number);
  BOOST_REQUIRE(rows.has_value());
  BOOST_TEST(rows->size() == 2u);
  BOOST_TEST(made == 2);
  BOOST_TEST(new_copies == 2);
  BOOST_TEST(old_copies == 0);
}

// What the session behind `lease` has prepared for one-trip calls: "name statement" lines.
std::vector<std::string> prepared_calls_of(rr::db::ConnectionPool::Lease& lease) {
  std::vector<std::string> lines;
  pqxx::nontransaction tx(lease.conn());
  for (const auto& row : tx.exec("SELECT name, statement FROM pg_prepared_statements "
                                 "WHERE name LIKE 'rr\\_call\\_%' ORDER BY name")) {
    lines.push_back(row[0].as<std::string>() + " " + row[1].as<std::string>());
  }
  return lines;
}

// Prepared-statement mode (the session carries its bound): a pooled call is a statement the
// session prepares once, its arguments parameters. Through PgBouncer (mode off) nothing is
// prepared and the same calls return the same rows.
BOOST_AUTO_TEST_CASE(a_pooled_call_is_prepared_once_per_session_in_prepared_statement_mode) {
  const bool prepared_mode = db.statement_mode() == rr::db::StatementMode::prepared;
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, 5s);
  const std::string nasty = "it's a \\'quote'' ; -- $1 \xc3\xa9\xe2\x82\xac";
  std::optional<rr::db::Result> first, second, numbers;
  run_fibers({[&] {
    auto lease = pool.acquire();
    first = rr::db::run_one_trip(lease, rr::db::call("echo", nasty, std::optional<std::string>{}, -42, true));
    second = rr::db::run_one_trip(lease, rr::db::call("echo", "b", "", 7, false));
    numbers = rr::db::run_one_trip(lease, rr::db::call("numbers", 3));
  }});
  BOOST_REQUIRE(first.has_value());
  BOOST_TEST((*first)[0][0].as<std::string>() == nasty);
  BOOST_TEST((*first)[0][1].is_null());
  BOOST_TEST((*first)[0][2].as<std::int64_t>() == -42);
  BOOST_TEST((*first)[0][3].as<bool>() == true);
  BOOST_TEST((*first)[0][4].as<std::string>() == "30s");  // the bound, from the session or SET LOCAL
  BOOST_TEST((*second)[0][0].as<std::string>() == "b");
  BOOST_TEST((*second)[0][1].as<std::string>() == "");  // an empty argument is not NULL
  BOOST_TEST((*second)[0][2].as<std::int64_t>() == 7);
  BOOST_TEST(numbers->size() == 3u);

  auto lease = pool.acquire();  // the same connection, off a fiber
  auto prepared = prepared_calls_of(lease);
  if (prepared_mode) {
    BOOST_TEST(prepared.size() == 2u);  // echo once for both calls, then numbers
    BOOST_TEST(prepared.at(0) == "rr_call_1 SELECT * FROM echo($1, $2, $3, $4)");
    BOOST_TEST(prepared.at(1) == "rr_call_2 SELECT * FROM numbers($1)");
  } else {
    BOOST_TEST(prepared.empty());
  }
}

BOOST_AUTO_TEST_CASE(a_prepared_call_fails_as_the_simple_query_does_and_the_session_goes_on) {
  rr::db::SessionOptions options = db.session_options();
  options.statement_timeout = 200ms;
  rr::db::ConnectionPool pool(db.url(), options, 1, 5s);
  bool own_sqlstate = false, timeout = false, undefined = false;
  std::optional<rr::db::Result> after;
  run_fibers({[&] {
    auto lease = pool.acquire();
    try {
      rr::db::run_one_trip(lease, rr::db::call("raise_sqlstate", rr::db::kLockTakenOver));
    } catch (const pqxx::sql_error& e) {
      own_sqlstate = rr::db::has_sqlstate(e, rr::db::kLockTakenOver);
      BOOST_TEST(e.query().find("raise_sqlstate") != std::string::npos, e.query());
    }
    try {
      rr::db::run_one_trip(lease, rr::db::call("sleep_for", 5));
    } catch (const pqxx::sql_error& e) {
      timeout = rr::db::is_statement_timeout(e);
    }
    // A function that does not exist fails where it is prepared, and is not taken as prepared.
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        rr::db::run_one_trip(lease, rr::db::call("no_such_function", 1));
      } catch (const pqxx::undefined_function&) {
        undefined = attempt == 1;
      }
    }
    after = rr::db::run_one_trip(lease, rr::db::call("numbers", 2));
  }});
  BOOST_TEST(own_sqlstate);
  BOOST_TEST(timeout);
  BOOST_TEST(undefined);
  BOOST_REQUIRE(after.has_value());
  BOOST_TEST(after->size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
