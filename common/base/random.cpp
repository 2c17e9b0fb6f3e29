// OS randomness for identifiers, a thread-local PRNG for jitter.
#include "common/base/random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <random>
#include <system_error>

namespace rr {

std::string random_uuid() {
  unsigned char b[16];
  std::size_t filled = 0;
  while (filled < sizeof b) {
    ssize_t n = getrandom(b + filled, sizeof b - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    filled += static_cast<std::size_t>(n);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

std::chrono::milliseconds jitter(std::chrono::milliseconds max) {
  if (max.count() <= 0) return std::chrono::milliseconds(0);
  thread_local std::mt19937_64 engine{std::random_device{}()};
  std::uniform_int_distribution<long long> dist(0, max.count());
  return std::chrono::milliseconds(dist(engine));
}

}  // namespace rr
