// Test fibers on a private io_context and worker pool.
#include "support/fibers.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/context/fiber.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <exception>

#include "common/fiber/fiber.hpp"
#include "common/fiber/fiber_context.hpp"
#include "support/test_database.hpp"

namespace rr::testing {

void run_fibers(std::vector<std::function<void()>> bodies, std::size_t worker_threads) {
  boost::asio::io_context io;
  boost::asio::thread_pool workers(worker_threads);
  std::exception_ptr first_failure;
  for (auto& body : bodies) {
    fiber::spawn(io.get_executor(), workers.get_executor(), [&first_failure, body = std::move(body)] {
      try {
        body();
      } catch (const boost::context::detail::forced_unwind&) {
        throw;
      } catch (...) {
        if (!first_failure) first_failure = std::current_exception();
      }
    });
  }
  io.run();
  workers.join();
  if (first_failure) std::rethrow_exception(first_failure);
}

std::string scalar_from_worker(test::TestDatabase& db, const std::string& sql) {
  return fiber::blocking([&] { return db.scalar(sql); });
}

void wait_until_true(test::TestDatabase& db, const std::string& sql) {
  for (int round = 0; round < 3000; ++round) {
    if (scalar_from_worker(db, sql) == "t") return;
    fiber::sleep_for(std::chrono::milliseconds(5));
  }
  BOOST_FAIL("never became true: " + sql);
}

}  // namespace rr::testing
