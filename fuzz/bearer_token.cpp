// The bearer token's form check (looks_like_token, common/auth/tokens.*), which decides whether a
// token reaches the database, against a reading of its own: "rr_" and 64 lowercase hex
// characters; the prefix kept for operators is the token's first 11 characters; a token made by
// generate_token has the form; and what is stored or logged of any text has its fixed size (a
// SHA-256 digest, its hex, the 12-character log tag).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/auth/tokens.hpp"
#include "fuzz/support/fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view token(reinterpret_cast<const char*>(data), size);
  bool expected = token.size() == 67 && token.starts_with("rr_") &&
                  token.substr(3).find_first_not_of("0123456789abcdef") == std::string_view::npos;
  FUZZ_CHECK(rr::auth::looks_like_token(token) == expected);
  FUZZ_CHECK(rr::auth::token_prefix(token) == token.substr(0, rr::auth::kTokenPrefixLength));
  if (size == 0) FUZZ_CHECK(rr::auth::looks_like_token(rr::auth::generate_token()));
  auto digest = rr::auth::sha256(token);
  FUZZ_CHECK(digest.size() == 32);
  auto hex = rr::auth::to_hex(digest);
  FUZZ_CHECK(hex.size() == 64 && hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  FUZZ_CHECK(rr::auth::log_tag(token) == hex.substr(0, 12));
  return 0;
}
