// Runs test bodies as request fibers (common/fiber/fiber.hpp) on one I/O thread, with a small
// worker pool for fiber::blocking, as the API's server does.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace rr::test {
class TestDatabase;
}

namespace rr::testing {

// Starts every body as a fiber on one I/O thread and returns when all have ended. An exception
// from a body is rethrown here (the first one) after all ended.
void run_fibers(std::vector<std::function<void()>> bodies, std::size_t worker_threads = 2);

// On a test fiber: `db.scalar(sql)` run on a worker while the fiber waits, so that the test's own
// blocking queries keep off the I/O thread.
std::string scalar_from_worker(test::TestDatabase& db, const std::string& sql);

// On a test fiber: suspends it until `sql` (run on a worker) answers "t"; a bounded number of
// rounds (about 15 s), so that a broken implementation fails the test instead of hanging it.
void wait_until_true(test::TestDatabase& db, const std::string& sql);

}  // namespace rr::testing
