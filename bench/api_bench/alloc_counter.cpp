// librocket-rides-alloc-counter.so: an LD_PRELOAD library with which bench/api_bench.sh counts a
// process's heap allocations per request (the standards' budget: round trips, context switches
// and allocations, counted and printed). Every allocation call (malloc, calloc, realloc,
// posix_memalign, aligned_alloc, memalign, and every operator new) adds one to a counter; the
// memory itself comes from the allocator the process would have used (tcmalloc in a Release
// build, glibc's otherwise).
//
// ALLOC_COUNTER_FILE names a file this library maps shared: its first 8 bytes are the count, so
// the bench reads it while the process runs (`od -An -t u8 -N 8 FILE`). Unset: counted, unread.
//
// operator new is served by the next allocator's malloc, not by the next operator new: glibc's
// libstdc++ implements new with malloc, which would be counted a second time here, while tcmalloc
// implements it apart from malloc, which would not be counted at all.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

using MallocFn = void* (*)(std::size_t);
using CallocFn = void* (*)(std::size_t, std::size_t);
using ReallocFn = void* (*)(void*, std::size_t);
using FreeFn = void (*)(void*);
using PosixMemalignFn = int (*)(void**, std::size_t, std::size_t);
using AlignedAllocFn = void* (*)(std::size_t, std::size_t);

MallocFn next_malloc = nullptr;
CallocFn next_calloc = nullptr;
ReallocFn next_realloc = nullptr;
FreeFn next_free = nullptr;
PosixMemalignFn next_posix_memalign = nullptr;
AlignedAllocFn next_aligned_alloc = nullptr;
AlignedAllocFn next_memalign = nullptr;

std::atomic<std::uint64_t> unmapped_count{0};
std::atomic<std::uint64_t>* count = &unmapped_count;

// dlsym may allocate (calloc) while the next allocator is being looked up: those few requests
// are served from here and never freed.
alignas(64) char bootstrap[8192];
std::size_t bootstrap_used = 0;
bool resolving = false;

bool from_bootstrap(const void* pointer) {
  auto* p = static_cast<const char*>(pointer);
  return p >= bootstrap && p < bootstrap + sizeof bootstrap;
}

void* bootstrap_allocate(std::size_t size) {
  std::size_t rounded = (size + 63) & ~std::size_t{63};
  if (bootstrap_used + rounded > sizeof bootstrap) return nullptr;
  void* p = bootstrap + bootstrap_used;
  bootstrap_used += rounded;
  return p;  // static storage: already zero, as calloc must return
}

template <typename Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

void resolve() {
  if (next_malloc != nullptr || resolving) return;
  resolving = true;
  next_calloc = next<CallocFn>("calloc");
  next_realloc = next<ReallocFn>("realloc");
  next_free = next<FreeFn>("free");
  next_posix_memalign = next<PosixMemalignFn>("posix_memalign");
  next_aligned_alloc = next<AlignedAllocFn>("aligned_alloc");
  next_memalign = next<AlignedAllocFn>("memalign");
  next_malloc = next<MallocFn>("malloc");
  resolving = false;
}

void counted() { count->fetch_add(1, std::memory_order_relaxed); }

__attribute__((constructor)) void map_counter_file() {
  resolve();
  const char* path = std::getenv("ALLOC_COUNTER_FILE");
  if (path == nullptr || *path == '\0') return;
  int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  void* mapped = MAP_FAILED;
  if (::ftruncate(fd, 4096) == 0) mapped = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) return;
  auto* shared = static_cast<std::atomic<std::uint64_t>*>(mapped);
  shared->store(unmapped_count.load(), std::memory_order_relaxed);
  count = shared;
}

void* new_from_malloc(std::size_t size) {
  for (;;) {
    if (void* p = malloc(size == 0 ? 1 : size)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* aligned_new_from_malloc(std::size_t size, std::align_val_t alignment) {
  for (;;) {
    void* p = nullptr;
    if (posix_memalign(&p, static_cast<std::size_t>(alignment), size == 0 ? 1 : size) == 0) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

}  // namespace

extern "C" {

void* malloc(std::size_t size) {
  resolve();
  if (next_malloc == nullptr) return bootstrap_allocate(size);
  counted();
  return next_malloc(size);
}

void* calloc(std::size_t members, std::size_t size) {
  resolve();
  if (next_calloc == nullptr) return bootstrap_allocate(members * size);
  counted();
  return next_calloc(members, size);
}

void* realloc(void* pointer, std::size_t size) {
  resolve();
  if (from_bootstrap(pointer) || next_realloc == nullptr) {
    void* moved = malloc(size);
    if (moved != nullptr && pointer != nullptr) {
      // The old block's size is unknown here; it ends at the arena's end at the latest.
      std::size_t room = static_cast<std::size_t>(bootstrap + sizeof bootstrap - static_cast<char*>(pointer));
      __builtin_memcpy(moved, pointer, size < room ? size : room);
    }
    return moved;
  }
  counted();
  return next_realloc(pointer, size);
}

void free(void* pointer) {
  if (pointer == nullptr || from_bootstrap(pointer)) return;
  resolve();
  next_free(pointer);
}

int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  resolve();
  if (next_posix_memalign == nullptr) return ENOMEM;
  counted();
  return next_posix_memalign(out, alignment, size);
}

void* aligned_alloc(std::size_t alignment, std::size_t size) {
  resolve();
  if (next_aligned_alloc == nullptr) return nullptr;
  counted();
  return next_aligned_alloc(alignment, size);
}

void* memalign(std::size_t alignment, std::size_t size) {
  resolve();
  if (next_memalign == nullptr) return nullptr;
  counted();
  return next_memalign(alignment, size);
}

}  // extern "C"

void* operator new(std::size_t size) { return new_from_malloc(size); }
void* operator new[](std::size_t size) { return new_from_malloc(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return malloc(size == 0 ? 1 : size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return malloc(size == 0 ? 1 : size); }
void* operator new(std::size_t size, std::align_val_t alignment) { return aligned_new_from_malloc(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return aligned_new_from_malloc(size, alignment); }
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  void* p = nullptr;
  return posix_memalign(&p, static_cast<std::size_t>(alignment), size == 0 ? 1 : size) == 0 ? p : nullptr;
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  void* p = nullptr;
  return posix_memalign(&p, static_cast<std::size_t>(alignment), size == 0 ? 1 : size) == 0 ? p : nullptr;
}

void operator delete(void* pointer) noexcept { free(pointer); }
void operator delete[](void* pointer) noexcept { free(pointer); }
void operator delete(void* pointer, std::size_t) noexcept { free(pointer); }
void operator delete[](void* pointer, std::size_t) noexcept { free(pointer); }
void operator delete(void* pointer, const std::nothrow_t&) noexcept { free(pointer); }
void operator delete[](void* pointer, const std::nothrow_t&) noexcept { free(pointer); }
void operator delete(void* pointer, std::align_val_t) noexcept { free(pointer); }
void operator delete[](void* pointer, std::align_val_t) noexcept { free(pointer); }
void operator delete(void* pointer, std::size_t, std::align_val_t) noexcept { free(pointer); }
void operator delete[](void* pointer, std::size_t, std::align_val_t) noexcept { free(pointer); }
void operator delete(void* pointer, std::align_val_t, const std::nothrow_t&) noexcept { free(pointer); }
void operator delete[](void* pointer, std::align_val_t, const std::nothrow_t&) noexcept { free(pointer); }
