// A fiber's wait on a registered socket, the deadline a timer on the same thread.
#include "common/fiber/descriptor_wait.hpp"

#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "common/fiber/fiber_context.hpp"

namespace rr::fiber {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

bool wait_until_ready(asio::posix::stream_descriptor& descriptor, asio::posix::descriptor_base::wait_type type,
                      std::chrono::steady_clock::time_point deadline, error_code& ec) {
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    suspended([&](auto& yield) { descriptor.async_wait(type, yield[ec]); });
    return true;
  }
  // The timer runs on this fiber's thread, as the wait does: its expiry cancels the wait there. An
  // expiry already queued when the wait ended runs after this function returned: it finds
  // `waiting` false and touches neither the descriptor nor this fiber's stack.
  struct Outcome {
    bool waiting = true;
    bool timed_out = false;
  };
  auto outcome = std::make_shared<Outcome>();
  asio::steady_timer timer(descriptor.get_executor(), deadline);
  timer.async_wait([outcome, &descriptor](error_code expired) {
    if (expired || !outcome->waiting) return;
    outcome->timed_out = true;
    error_code ignored;
    descriptor.cancel(ignored);
  });
  suspended([&](auto& yield) { descriptor.async_wait(type, yield[ec]); });
  outcome->waiting = false;
  timer.cancel();
  return !outcome->timed_out;
}

}  // namespace rr::fiber
