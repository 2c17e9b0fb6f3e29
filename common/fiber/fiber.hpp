// Request fibers: the API runs a flow request as a stackful fiber on its connection's
// I/O thread, so the same blocking-style code (endpoint, runner, phases) runs there without a
// worker thread per wait. Only the leaves wait differently: a pool checkout, a one-trip SQL call,
// a provider call and a sleep suspend the fiber and let the I/O thread serve others meanwhile;
// anything else that blocks (a libpqxx transaction, say) runs through blocking(), which hands it
// to the worker pool while the fiber waits. Off a fiber (workers, daemons, tools) every function
// here does what a thread would: block in place.
//
// One rule for code that may run on a fiber: never suspend inside a catch clause or while an
// exception unwinds (a destructor). The C++ runtime keeps the exceptions being handled per thread,
// not per fiber; another fiber catching on the same thread meanwhile corrupts that stack (ASan saw
// it as a use after free of an exception object). Take what the handler needs, leave the clause,
// then wait (PhaseRunner::run does so); blocking() runs in place while an exception unwinds.
//
// This header is Asio-free on purpose: the database and payment code call it without taking on
// Asio. fiber_context.hpp is the Asio side, for the server and the leaves' implementations.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace rr::fiber {

// True while the calling code runs on a request fiber.
bool active();

// Suspends the fiber for `duration` (the I/O thread serves others); a thread sleeps.
void sleep_for(std::chrono::milliseconds duration);

namespace detail {
// Runs `work` on the worker pool and suspends the fiber until it returned (it must not throw).
void run_on_workers(const std::function<void()>& work);
}  // namespace detail

// Runs `work` where blocking is allowed: on a fiber, on the worker pool while the fiber waits
// (its result or exception comes back); elsewhere in place. A destructor running while an
// exception unwinds (a rollback, say) runs its work in place: a fiber must not suspend then.
template <typename Work>
auto blocking(Work&& work) -> std::invoke_result_t<Work&> {
  using Result = std::invoke_result_t<Work&>;
  if (!active() || std::uncaught_exceptions() > 0) return work();
  std::exception_ptr failure;
  if constexpr (std::is_void_v<Result>) {
    detail::run_on_workers([&] {
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
    });
    if (failure) std::rethrow_exception(failure);
  } else {
    std::optional<Result> result;
    detail::run_on_workers([&] {
      try {
        result.emplace(work());
      } catch (...) {
        failure = std::current_exception();
      }
    });
    if (failure) std::rethrow_exception(failure);
    return std::move(*result);
  }
}

// A fiber waiting for another thread's word (a free pooled connection, say). Made by the fiber
// that waits (only while active()); wake() may come from any thread, before or during the wait.
class Waker {
 public:
  static std::shared_ptr<Waker> for_this_fiber();
  virtual ~Waker() = default;
  // Suspends until wake() or `deadline`; true when woken (at once if wake() came first).
  virtual bool wait_until(std::chrono::steady_clock::time_point deadline) = 0;
  virtual void wake() = 0;
};

// Waits for a socket the fiber does not own (libpq's) to become readable or writable: registered
// with the I/O thread's reactor for the watch's lifetime, never closed by it. Only on a fiber.
class SocketWatch {
 public:
  explicit SocketWatch(int socket);
  ~SocketWatch();
  SocketWatch(const SocketWatch&) = delete;
  SocketWatch& operator=(const SocketWatch&) = delete;
  // False when `deadline` passed first; time_point::max() waits with no timer at all.
  bool wait_readable(std::chrono::steady_clock::time_point deadline);
  bool wait_writable(std::chrono::steady_clock::time_point deadline);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rr::fiber
