// Bearer tokens: generated from the OS's randomness, stored only as SHA-256 hashes.
#pragma once

#include <string>
#include <string_view>

namespace rr::auth {

// "rr_" followed by 64 hex characters (256 random bits from getrandom(2)).
std::string generate_token();
// Cheap shape check so that garbage never reaches the database.
bool looks_like_token(std::string_view token);
// The raw 32-byte SHA-256 digest.
std::string sha256(std::string_view data);
std::string to_hex(std::string_view bytes);
// A short, non-reversible tag for logs (12 hex characters of SHA-256): never log a full
// idempotency key or token, but let operators correlate lines about the same one.
std::string log_tag(std::string_view secret);

}  // namespace rr::auth
