// Randomness from the OS for identifiers, and a cheap per-thread generator for jitter.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace rr {

// A version 4 UUID in canonical text form, from getrandom(2) (drawn 512 bytes at a time per thread).
std::string random_uuid();
// `bytes` bytes from getrandom(2) as lowercase hex (2 * bytes characters): for secrets such as
// session and CSRF tokens.
std::string random_hex(std::size_t bytes);
// The same form from a per-thread generator seeded by getrandom(2): unique in practice but
// predictable, so only for ids that are not secrets (request ids). No system call per id.
std::string fast_uuid();
// A uniformly random duration in [0, max]: "full jitter" for retries and backoff.
std::chrono::milliseconds jitter(std::chrono::milliseconds max);

}  // namespace rr
