// OS randomness for identifiers, a thread-local PRNG for jitter.
#include "common/base/random.hpp"

#include <pthread.h>
#include <sys/random.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <system_error>

namespace rr {

namespace {

void fill_from_os(unsigned char* out, std::size_t size) {
  std::size_t filled = 0;
  while (filled < size) {
    ssize_t n = getrandom(out + filled, size - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    filled += static_cast<std::size_t>(n);
  }
}

// By hand rather than snprintf: fast_uuid() names every request, and snprintf's format parsing
// was most of its cost.
std::string format_uuid_v4(unsigned char (&b)[16]) {
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(36, '-');
  std::size_t at = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) ++at;  // the dashes, already in place
    out[at++] = kDigits[b[i] >> 4];
    out[at++] = kDigits[b[i] & 0x0f];
  }
  return out;
}

// OS randomness drawn a block at a time per thread: every new key takes a UUID (its lock token),
// and one getrandom(2) per UUID was a system call per request. The bytes are the kernel's all the
// same. A fork bumps the generation, so a child never hands out the bytes its parent already has.
std::atomic<unsigned> fork_generation{0};

void take_os_bytes(unsigned char* out, std::size_t size) {
  struct Block {
    unsigned char bytes[512];
    std::size_t used = sizeof bytes;
    unsigned generation = 0;
  };
  thread_local Block block;
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { fork_generation.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  (void)registered;
  unsigned generation = fork_generation.load(std::memory_order_relaxed);
  if (block.generation != generation || sizeof block.bytes - block.used < size) {
    fill_from_os(block.bytes, sizeof block.bytes);
    block.used = 0;
    block.generation = generation;
  }
  std::memcpy(out, block.bytes + block.used, size);
  std::memset(block.bytes + block.used, 0, size);  // handed out once, kept nowhere
  block.used += size;
}

}  // namespace

std::string random_hex(std::size_t bytes) {
  std::string random(bytes, '\0');
  fill_from_os(reinterpret_cast<unsigned char*>(random.data()), random.size());
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : random) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0x0f];
  }
  return out;
}

std::string random_uuid() {
  unsigned char b[16];
  take_os_bytes(b, sizeof b);
  return format_uuid_v4(b);
}

std::string fast_uuid() {
  thread_local std::mt19937_64 engine = [] {
    std::uint64_t seed[2];
    fill_from_os(reinterpret_cast<unsigned char*>(seed), sizeof seed);
    std::seed_seq sequence{seed[0], seed[0] >> 32, seed[1], seed[1] >> 32};
    return std::mt19937_64(sequence);
  }();
  unsigned char b[16];
  std::uint64_t high = engine(), low = engine();
  std::memcpy(b, &high, 8);
  std::memcpy(b + 8, &low, 8);
  return format_uuid_v4(b);
}

std::chrono::milliseconds jitter(std::chrono::milliseconds max) {
  if (max.count() <= 0) return std::chrono::milliseconds(0);
  thread_local std::mt19937_64 engine{std::random_device{}()};
  std::uniform_int_distribution<long long> dist(0, max.count());
  return std::chrono::milliseconds(dist(engine));
}

}  // namespace rr
