// The sf-string reader and writer (common/http/structured_string.*) and the Idempotency-Key reader
// over them (parse_idempotency_key): any bytes are read or refused without a crash; a string read
// is written back as the very bytes it came from (an sf-string has one spelling per text) and
// reads again as itself; any text the writer takes reads back unchanged; and a key accepted is
// within the key's bounds and means what the grammar, or the bare header, says.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/http/message.hpp"
#include "common/http/structured_string.hpp"
#include "fuzz/support/fuzz_check.hpp"

namespace {

std::string_view without_spaces_around(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

bool within_key_bounds(const std::string& key) {
  if (key.size() < rr::api::kMinIdempotencyKeyLength || key.size() > rr::api::kMaxIdempotencyKeyLength) return false;
  if (key.find(',') != std::string::npos || key.find_first_not_of(" \t") == std::string::npos) return false;
  for (unsigned char c : key) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);

  auto text = rr::http::parse_sf_string(input);
  if (text) {
    auto written = rr::http::serialize_sf_string(*text);
    FUZZ_CHECK(written.has_value());  // what was read holds only what a string can carry
    FUZZ_CHECK(*written == without_spaces_around(input));
    auto again = rr::http::parse_sf_string(*written);
    FUZZ_CHECK(again.has_value() && *again == *text);
  }

  if (auto written = rr::http::serialize_sf_string(input)) {
    auto back = rr::http::parse_sf_string(*written);
    FUZZ_CHECK(back.has_value() && *back == input);
  }

  rr::http::Request request;
  request.headers = {{"Idempotency-Key", std::string(input)}};
  try {
    std::string key = rr::api::parse_idempotency_key(request);
    FUZZ_CHECK(within_key_bounds(key));
    bool quoted = input.size() >= 2 && input.front() == '"' && input.back() == '"';
    FUZZ_CHECK(quoted ? text.has_value() && key == *text : key == input);
  } catch (const rr::api::ApiError& refused) {
    FUZZ_CHECK(refused.status == 400);
  }
  return 0;
}
