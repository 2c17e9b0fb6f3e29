// Time as the suites measure and wait for it: durations in milliseconds for messages, and polling
// for a condition that other threads or processes make true.
#pragma once

#include <chrono>
#include <thread>

namespace rr::test {

// A duration in whole milliseconds, for failure messages and counts of elapsed time.
inline long millis(std::chrono::steady_clock::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// Polls `condition` every `step` until it holds (true) or `timeout` has passed (false): a bound on
// waiting for something another thread or process does, so that a broken implementation fails
// the test instead of hanging it. The bound is generous; no test asserts how quickly it holds.
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                std::chrono::milliseconds step = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
  return true;
}

}  // namespace rr::test
