// REDIS_URL (common/redis/redis_url.*): any text is read or refused with RedisUrlError, and what
// is read is an endpoint one could connect to. The first byte picks how the rest is used: as the
// whole URL, or as the parts of a URL that carries a password the fuzzer cannot see (a marker
// followed by fuzzed bytes) in each place a password goes; then no error's message and no
// endpoint's describe() may contain the marker, since both reach logs.
// Input: a mode byte, then the URL (mode 0) or the user and the password on a line each and the
// rest of the URL.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/redis/redis_url.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"

namespace {

// Letters and digits only: the same bytes after percent-decoding, and nothing a message about the
// URL's grammar would say.
constexpr std::string_view kPasswordMarker = "Pw7QzX4kV9";

void check_endpoint(const rr::redis::RedisEndpoint& endpoint) {
  FUZZ_CHECK(endpoint.port >= 1);
  FUZZ_CHECK(endpoint.db >= 0 && endpoint.db <= 1'000'000);
  if (endpoint.is_unix_socket()) {
    FUZZ_CHECK(endpoint.socket_path.front() == '/');
  } else {
    FUZZ_CHECK(!endpoint.host.empty());
  }
}

// The URL for a mode other than 0, with the password where that form carries it.
std::string url_with_password(std::uint8_t mode, std::string_view user, std::string_view password,
                              std::string_view rest) {
  std::string secret = std::string(kPasswordMarker) + std::string(password);
  switch (mode % 4) {
    case 0:
      return "redis://" + std::string(user) + ":" + secret + "@" + std::string(rest);
    case 1:
      return "redis://" + secret + "@" + std::string(rest);  // the password-only form
    case 2:
      return "unix://" + std::string(rest) + "?password=" + secret;
    default:
      return "/" + std::string(rest) + "?db=1&password=" + secret;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::uint8_t mode = data[0];
  if (mode == 0) {
    try {
      check_endpoint(rr::redis::parse_redis_url(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1)));
    } catch (const rr::redis::RedisUrlError&) {
    }
    return 0;
  }

  rr::fuzz::InputLines input(data + 1, size - 1);
  std::string_view user = input.line();
  std::string_view password = input.line();
  std::string_view rest = input.rest();
  // The marker must be the password's alone.
  for (auto part : {user, rest}) {
    if (part.find(kPasswordMarker) != std::string_view::npos) return 0;
  }
  std::string url = url_with_password(mode, user, password, rest);
  try {
    auto endpoint = rr::redis::parse_redis_url(url);
    check_endpoint(endpoint);
    FUZZ_CHECK(endpoint.describe().find(kPasswordMarker) == std::string::npos);
  } catch (const rr::redis::RedisUrlError& refused) {
    FUZZ_CHECK(std::string_view(refused.what()).find(kPasswordMarker) == std::string_view::npos);
  }
  return 0;
}
