// Runs test bodies as request fibers (common/fiber/fiber.hpp) on one I/O thread, with a small
// worker pool for fiber::blocking, as the API's server does.
#pragma once

#include <functional>
#include <vector>

namespace rr::testing {

// Starts every body as a fiber on one I/O thread and returns when all have ended. An exception
// from a body is rethrown here (the first one) after all ended.
void run_fibers(std::vector<std::function<void()>> bodies, std::size_t worker_threads = 2);

}  // namespace rr::testing
