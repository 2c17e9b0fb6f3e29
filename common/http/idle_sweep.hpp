// The deadlines of connections waiting for their next request, checked by one periodic timer per
// I/O thread instead of one timer per wait. A keep-alive connection waits before every request it
// serves; an Asio timer per wait costs a heap insertion and a removal under the reactor's lock,
// and the cancelled timer's own completion, for a deadline that is almost never reached. Here a
// wait costs two vector operations, and a connection past its deadline is told within one period.
//
// One sweep per io_context, used only from that io_context's thread: no locks. A waiter is in the
// sweep only while its wait is pending, which keeps it alive, so the sweep holds plain pointers.
// The timer runs only while some waiter waits, so an idle server does not wake for it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <limits>
#include <vector>

namespace rr::http {

class IdleWaiter {
 public:
  // On the sweep's thread, once, when the wait is past its deadline; the waiter is out of the
  // sweep already.
  virtual void idle_deadline_passed() = 0;

 protected:
  ~IdleWaiter() = default;

 private:
  friend class IdleSweep;
  std::chrono::steady_clock::time_point idle_deadline_;
  std::size_t idle_slot_ = std::numeric_limits<std::size_t>::max();
};

class IdleSweep {
 public:
  IdleSweep(boost::asio::io_context& context, std::chrono::milliseconds period);

  // A wait begins; it ends with remove() or when the sweep finds it past `deadline`.
  void add(IdleWaiter& waiter, std::chrono::steady_clock::time_point deadline);
  // The wait ended (its data arrived, or it failed); nothing when the sweep has removed it already.
  void remove(IdleWaiter& waiter);

  std::size_t waiting() const { return waiters_.size(); }

 private:
  void schedule();
  void sweep();

  boost::asio::steady_timer timer_;
  const std::chrono::milliseconds period_;
  std::vector<IdleWaiter*> waiters_;
  std::vector<IdleWaiter*> passed_;  // kept between sweeps for its capacity
  bool running_ = false;
};

// How often a sweep runs for these timeouts: an eighth of the shorter one, so a connection is
// closed at most 12.5 % late, within [10 ms, 1 s] so short test timeouts still hold and long ones
// wake an I/O thread at most once a second.
std::chrono::milliseconds idle_sweep_period(std::chrono::milliseconds read_timeout,
                                            std::chrono::milliseconds idle_timeout);

}  // namespace rr::http
