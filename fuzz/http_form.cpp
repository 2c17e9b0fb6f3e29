// The form codec (common/http/form.*), as a form body or a query string meets it: any bytes are
// decoded or refused without a crash, and fields that decode encode to text of the unreserved
// characters, '%XX', '+', '=' and '&' alone, which decodes to the very same fields.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/form.hpp"
#include "fuzz/support/fuzz_check.hpp"

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

bool is_unreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// What form_encode promises to write: safe in any URL and any form body, escapes in upper case.
bool is_canonical_form(std::string_view encoded) {
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    char c = encoded[i];
    if (c == '%') {
      if (i + 2 >= encoded.size() || !is_hex_digit(encoded[i + 1]) || !is_hex_digit(encoded[i + 2])) {
        return false;
      }
      i += 2;
    } else if (!is_unreserved(c) && c != '+' && c != '=' && c != '&') {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  Fields fields;
  if (!rr::http::form_decode(body, fields)) return 0;

  std::string encoded = rr::http::form_encode(fields);
  FUZZ_CHECK(is_canonical_form(encoded));
  Fields again;
  FUZZ_CHECK(rr::http::form_decode(encoded, again));
  FUZZ_CHECK(again == fields);
  // Canonical text is a fixed point: encoding what it decodes to gives it back.
  FUZZ_CHECK(rr::http::form_encode(again) == encoded);
  return 0;
}
