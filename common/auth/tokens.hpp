// Bearer tokens: generated from the OS's randomness, stored only as SHA-256 hashes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rr::auth {

// "rr_" followed by 64 hex characters (256 random bits from getrandom(2)).
std::string generate_token();
// Cheap shape check so that garbage never reaches the database.
bool looks_like_token(std::string_view token);
// What is stored beside the hash so that an operator can name a token (api_tokens.token_prefix):
// its first kTokenPrefixLength characters, "rr_" and 8 hex digits.
inline constexpr std::size_t kTokenPrefixLength = 11;
std::string token_prefix(std::string_view token);
// The raw 32-byte SHA-256 digest.
std::string sha256(std::string_view data);
std::string to_hex(std::string_view bytes);
// A short, non-reversible tag for logs (12 hex characters of SHA-256): never log a full
// idempotency key or token, but let operators correlate lines about the same one.
std::string log_tag(std::string_view secret);

}  // namespace rr::auth
