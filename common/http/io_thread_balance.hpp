// Which I/O thread serves a connection, and how many of them are in use. Light traffic (new keys,
// whose requests mostly wait for PostgreSQL and the provider) costs least on one thread: each of
// its wake-ups finds more ready work, and an idle thread costs nothing. Traffic that keeps a
// thread busy on its own (replays answered from memory) wants every thread. So the threads in use
// are the first `active()` ones, starting with one: when those are busy the next one is taken in,
// and when the others could carry one thread's load it is given back. Connections follow at
// their next request boundary (the server moves the socket): a connection on a thread out of use
// moves to one in use, and one on a crowded thread to the emptiest, one move at a time.
//
// Counts are atomics and decisions read them without a lock: a request boundary asks
// target_for() on every answer, and two threads deciding at once at worst move one connection
// too many, which the next boundaries even out.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

namespace rr::http {

class IoThreadBalance {
 public:
  // Mean share of a core the threads in use wanted (ran, or waited runnable for one: a thread that
  // other work keeps off its core is as busy as one that runs) above which the next one is taken in.
  static constexpr double kSpreadAbove = 0.7;
  // One thread is given back when the others would carry the whole load at this share or less:
  // well below kSpreadAbove, so a load near the line does not take a thread in and out by turns.
  static constexpr double kGatherAtMost = 0.5;

  explicit IoThreadBalance(std::size_t threads);

  std::size_t threads() const { return threads_; }
  std::size_t active() const { return active_.load(std::memory_order_relaxed); }
  std::size_t connections(std::size_t thread) const;

  // Where the next connection goes: among the threads in use, the one with the fewest connections.
  std::size_t placement() const;
  // A connection was placed on `thread`.
  void placed(std::size_t thread);
  // At a request boundary of a connection on `thread`: the thread it should move to, if any.
  std::optional<std::size_t> target_for(std::size_t thread) const;
  // The connection moved (the server calls this once the socket is on `to`).
  void moved(std::size_t from, std::size_t to);
  // A connection on `thread` closed.
  void closed(std::size_t thread);

  // What each thread wanted over the last period, as a share of one core (one entry per thread):
  // takes the next thread in or gives the last one back. Called from one place at a time.
  void observe(const std::vector<double>& busy);

 private:
  const std::size_t threads_;
  std::unique_ptr<std::atomic<std::size_t>[]> connections_;
  std::atomic<std::size_t> active_{1};
};

}  // namespace rr::http
