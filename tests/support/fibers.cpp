// Test fibers on a private io_context and worker pool.
#include "support/fibers.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/context/fiber.hpp>
#include <exception>

#include "common/fiber/fiber_context.hpp"

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

}  // namespace rr::testing
