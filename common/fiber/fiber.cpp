// Request fibers: the current fiber, spawning one, and the suspending leaves every caller shares
// (sleep, a hand-off to the workers, a wake-up from another thread, a socket's readiness).
#include <atomic>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <thread>

#include "common/fiber/descriptor_wait.hpp"
#include "common/fiber/fiber.hpp"
#include "common/fiber/fiber_context.hpp"
#include "common/fiber/stack_pool.hpp"

namespace rr::fiber {
namespace {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

thread_local Context* running = nullptr;

class TimerWaker : public Waker, public std::enable_shared_from_this<TimerWaker> {
 public:
  explicit TimerWaker(const asio::any_io_executor& executor) : timer_(executor) {}

  bool wait_until(std::chrono::steady_clock::time_point deadline) override {
    if (woken_.load()) return true;
    timer_.expires_at(deadline);
    error_code ec;
    suspended([&](auto& yield) { timer_.async_wait(yield[ec]); });
    return woken_.load();
  }

  void wake() override {
    if (woken_.exchange(true)) return;
    // The timer belongs to the fiber's thread: cancel it there. A wake before the wait began is
    // seen by wait_until's check; one after it finds the wait and ends it.
    asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
  }

 private:
  asio::steady_timer timer_;
  std::atomic<bool> woken_{false};
};

}  // namespace

Context* current() { return running; }

namespace detail {

// suspended() (fiber_context.hpp) clears the current fiber right before every suspension, and is
// the only caller that clears a running one (a fiber that ends clears it itself, below): where
// debug and sanitized builds (no NDEBUG) check fiber.hpp's rule. The runtime's stack of exceptions
// being handled is per thread, so a fiber suspended in a catch clause corrupts another fiber's
// handler only some of the time; ending the process at the suspension, with one line, makes the
// broken rule fail every time, where it was broken.
void set_current(Context* context) {
#ifndef NDEBUG
  if (context == nullptr && running != nullptr &&
      (std::current_exception() != nullptr || std::uncaught_exceptions() > 0)) {
    std::fprintf(stderr,
                 "level=fatal msg=\"a fiber suspended %s: another fiber on this thread would corrupt the "
                 "exception being handled\"\n",
                 std::current_exception() != nullptr ? "inside a catch clause" : "while an exception unwinds");
    std::abort();
  }
#endif
  running = context;
}

void run_on_workers(const std::function<void()>& work) {
  asio::any_io_executor workers = running->workers;
  suspended([&](auto& yield) {
    asio::async_initiate<std::remove_reference_t<decltype(yield)>, void()>(
        [&work, &workers](auto handler) mutable {
          // The fiber's thread counts this as its work until the handler is back, or its
          // io_context could run out of work and return while the fiber waits on a worker.
          auto home = asio::prefer(asio::get_associated_executor(handler), asio::execution::outstanding_work.tracked);
          asio::post(workers, [&work, home = std::move(home), handler = std::move(handler)]() mutable {
            work();
            // Back to the fiber's own thread: the handler resumes it there.
            asio::post(home, std::move(handler));
          });
        },
        yield);
  });
}

}  // namespace detail

bool active() { return running != nullptr; }

void sleep_for(std::chrono::milliseconds duration) {
  if (!active()) return std::this_thread::sleep_for(duration);
  asio::steady_timer timer(running->yield.get_executor(), duration);
  error_code ec;
  suspended([&](auto& yield) { timer.async_wait(yield[ec]); });
}

std::shared_ptr<Waker> Waker::for_this_fiber() {
  if (!active()) return nullptr;
  return std::make_shared<TimerWaker>(running->yield.get_executor());
}

struct SocketWatch::Impl {
  explicit Impl(const asio::any_io_executor& executor, int socket) : descriptor(executor, socket) {}
  ~Impl() {
    error_code ignored;
    descriptor.cancel(ignored);
    descriptor.release();  // the socket is libpq's: deregister it, never close it
  }
  bool wait(asio::posix::descriptor_base::wait_type type, std::chrono::steady_clock::time_point deadline) {
    error_code ec;  // an error of the wait itself: libpq's next read or write reports the socket's
    return wait_until_ready(descriptor, type, deadline, ec);
  }
  asio::posix::stream_descriptor descriptor;
};

SocketWatch::SocketWatch(int socket) : impl_(std::make_unique<Impl>(running->yield.get_executor(), socket)) {}
SocketWatch::~SocketWatch() = default;

bool SocketWatch::wait_readable(std::chrono::steady_clock::time_point deadline) {
  return impl_->wait(asio::posix::descriptor_base::wait_read, deadline);
}
bool SocketWatch::wait_writable(std::chrono::steady_clock::time_point deadline) {
  return impl_->wait(asio::posix::descriptor_base::wait_write, deadline);
}

void spawn(asio::any_io_executor executor, asio::any_io_executor workers, std::function<void()> body) {
  asio::spawn(
      executor, std::allocator_arg, PooledStacks{},
      [workers = std::move(workers), body = std::move(body)](asio::basic_yield_context<asio::any_io_executor> yield) {
        Context context{yield, workers};
        struct Leave {
          ~Leave() { running = nullptr; }  // an ending fiber, not a suspension: no check
        } leave;
        detail::set_current(&context);
        body();
      },
      [](std::exception_ptr failure) {
        if (failure) std::rethrow_exception(failure);
      });
}

}  // namespace rr::fiber
