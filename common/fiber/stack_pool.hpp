// Stacks for request fibers: mapped once with a guard page below each (an overflow faults instead
// of corrupting a neighbour) and kept per thread for the next fiber, so a request pays no mmap,
// munmap or fresh page faults for its stack once traffic flows.
#pragma once

#include <boost/context/stack_context.hpp>

namespace rr::fiber {

// A Boost.Context stack allocator over the calling thread's pool.
class PooledStacks {
 public:
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& stack) noexcept;
};

}  // namespace rr::fiber
