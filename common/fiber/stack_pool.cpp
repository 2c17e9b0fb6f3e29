// Fiber stacks: mmap with a guard page, a bounded free list per thread.
#include "common/fiber/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <vector>

namespace rr::fiber {
namespace {

// AddressSanitizer, as GCC says it and as clang does (clang 14 has no __SANITIZE_ADDRESS__).
#if defined(__SANITIZE_ADDRESS__)
#define RR_FIBER_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RR_FIBER_ADDRESS_SANITIZER 1
#endif
#endif

// The deepest request path (endpoint, runner, phase, libpqxx, Beast, logging) uses a few tens of
// KiB; sanitizers' redzones make frames several times larger.
#if defined(RR_FIBER_ADDRESS_SANITIZER)
constexpr std::size_t kStackSize = 1024 * 1024;
#else
constexpr std::size_t kStackSize = 256 * 1024;
#endif
// Stacks kept per thread beyond the fibers alive: about the peak of concurrent requests per I/O thread.
constexpr std::size_t kKeptPerThread = 256;

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

struct Mapping {
  void* base;  // the guard page, lowest address
  std::size_t length;
};

struct FreeStacks {
  std::vector<Mapping> kept;
  ~FreeStacks() {
    for (auto& mapping : kept) ::munmap(mapping.base, mapping.length);
  }
};

thread_local FreeStacks free_stacks;

}  // namespace

boost::context::stack_context PooledStacks::allocate() {
  Mapping mapping{};
  if (!free_stacks.kept.empty()) {
    mapping = free_stacks.kept.back();
    free_stacks.kept.pop_back();
  } else {
    mapping.length = kStackSize + page_size();
    mapping.base =
        ::mmap(nullptr, mapping.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (mapping.base == MAP_FAILED) throw std::bad_alloc();
    ::mprotect(mapping.base, page_size(), PROT_NONE);
  }
  boost::context::stack_context stack;
  stack.size = mapping.length - page_size();
  stack.sp = static_cast<char*>(mapping.base) + mapping.length;  // stacks grow down
  return stack;
}

void PooledStacks::deallocate(boost::context::stack_context& stack) noexcept {
  Mapping mapping{static_cast<char*>(stack.sp) - stack.size - page_size(), stack.size + page_size()};
  if (free_stacks.kept.size() < kKeptPerThread) {
    try {
      free_stacks.kept.push_back(mapping);
      return;
    } catch (...) {
    }
  }
  ::munmap(mapping.base, mapping.length);
}

}  // namespace rr::fiber
