// The CSRF comparison (common/web/csrf.*): for any pair, csrf_matches says yes exactly when the
// given token has a token's form (64 lowercase hex characters) and equals the expected one, read
// here with a plain comparison; and a freshly made token has that form and matches itself.
// Input: the expected token on the first line, the given one after it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/web/csrf.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"

namespace {

bool has_token_form(std::string_view token) {
  return token.size() == 64 && token.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  std::string_view expected = input.line();
  std::string_view given = input.rest();
  FUZZ_CHECK(rr::web::csrf_matches(expected, given) == (has_token_form(given) && expected == given));
  FUZZ_CHECK(rr::web::csrf_matches(given, given) == has_token_form(given));
  if (size == 0) {
    auto fresh = rr::web::new_csrf_token();
    FUZZ_CHECK(has_token_form(fresh) && rr::web::csrf_matches(fresh, fresh));
  }
  return 0;
}
