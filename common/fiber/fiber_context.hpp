// The Asio side of request fibers (fiber.hpp): what a running fiber is, how the server starts one
// and how a leaf suspends it. Only translation units that include Asio anyway include this.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/spawn.hpp>
#include <functional>
#include <utility>

namespace rr::fiber {

// What a fiber's leaves need: how to suspend it, and where blocking work goes meanwhile.
struct Context {
  boost::asio::basic_yield_context<boost::asio::any_io_executor> yield;
  boost::asio::any_io_executor workers;
};

// The fiber running on this thread now, or null. A leaf takes it, clears it while the fiber is
// suspended (the I/O thread runs other handlers, which are not on a fiber) and restores it when
// the fiber resumes: see suspended().
Context* current();

namespace detail {
void set_current(Context* context);
}  // namespace detail

// Runs `suspend(yield)`, an asynchronous operation completed through the fiber's yield context,
// with current() cleared meanwhile and restored afterwards, also when it throws.
template <typename Suspend>
decltype(auto) suspended(Suspend&& suspend) {
  Context* self = current();
  struct Restore {
    Context* self;
    ~Restore() { detail::set_current(self); }
  } restore{self};
  detail::set_current(nullptr);
  return suspend(self->yield);
}

// Starts `body` as a fiber on `executor` (an I/O thread's), with current() set while it runs.
// Its stack comes from a per-thread pool of stacks reused across fibers. An exception escaping
// `body` ends the process, as one escaping a worker thread's task does.
void spawn(boost::asio::any_io_executor executor, boost::asio::any_io_executor workers, std::function<void()> body);

}  // namespace rr::fiber
