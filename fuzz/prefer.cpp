// The Prefer header's `wait` (common/http/prefer_header.*): any fields are read without a crash,
// a value saturates rather than wraps, and the reading is the one RFC 9110 section 5.3 requires of
// a list header: the fields given separately mean what they mean joined into one with commas
// (checked when no quote or backslash could carry a quoted-string across a field's end), and
// neither the field name's case nor other fields change it.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "common/http/message.hpp"
#include "common/http/prefer_header.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/split.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // One Prefer field per line, as a request with the header repeated carries them.
  rr::http::Headers fields;
  rr::http::Headers with_other_case_and_noise = {{"Prefer-Not", "wait=1"}};
  std::string joined;
  for (auto line : rr::fuzz::split_all(input, '\n')) {
    fields.emplace_back("Prefer", std::string(line));
    with_other_case_and_noise.emplace_back("pReFeR", std::string(line));
    with_other_case_and_noise.emplace_back("X-Prefer", "wait=7");
    if (!joined.empty()) joined += ", ";
    joined += line;
  }

  auto wait = rr::http::preferred_wait_seconds(fields);
  if (wait) FUZZ_CHECK(*wait <= std::numeric_limits<std::uint32_t>::max());
  FUZZ_CHECK(rr::http::preferred_wait_seconds(with_other_case_and_noise) == wait);
  if (input.find_first_of("\"\\") == std::string_view::npos) {
    FUZZ_CHECK(rr::http::preferred_wait_seconds({{"Prefer", joined}}) == wait);
  }
  return 0;
}
