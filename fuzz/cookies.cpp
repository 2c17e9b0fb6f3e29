// The Cookie header's reader (common/web/cookies.*) and the name=value part of Set-Cookie: any
// header is read or ignored without a crash, within its bounds; a value found is cookie-octets, and
// sent back as Set-Cookie writes it, it is found again; any token name and cookie-octet value make
// that round trip; and the session cookie's form check (looks_like_session_token) agrees with a
// reading of its own. Input: the name to look up on the first line, then the Cookie fields, one a
// line.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/message.hpp"
#include "common/web/cookies.hpp"
#include "common/web/session_token.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"
#include "fuzz/support/split.hpp"

namespace {

bool is_token(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    if (c <= 0x20 || c >= 0x7f ||
        std::string_view("()<>@,;:\\\"/[]?={}").find(static_cast<char>(c)) != std::string_view::npos)
      return false;
  }
  return true;
}

bool is_cookie_value(std::string_view value) {
  for (unsigned char c : value) {
    if (c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\') return false;
  }
  return true;
}

bool is_lower_hex(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The Cookie header a browser sends back for what Set-Cookie set: its name=value, before the
// attributes.
std::optional<std::string> sent_back(std::string_view name, std::string_view value) {
  std::string set = rr::web::set_cookie(name, value, {std::chrono::seconds(60), true});
  rr::http::Request request;
  request.headers = {{"Cookie", set.substr(0, set.find(';'))}};
  return rr::web::cookie_value(request, name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  std::string_view name = input.line();
  std::string_view fields = input.rest();
  rr::http::Request request;
  for (auto line : rr::fuzz::split_all(fields, '\n')) request.headers.emplace_back("Cookie", std::string(line));

  auto found = rr::web::cookie_value(request, name);
  if (found) {
    FUZZ_CHECK(request.headers.size() == 1 && request.headers[0].second.size() <= rr::web::kMaxCookieHeaderBytes);
    FUZZ_CHECK(is_token(name));
    FUZZ_CHECK(is_cookie_value(*found));
    FUZZ_CHECK(sent_back(name, *found) == found);
  }
  if (is_token(name) && is_cookie_value(fields)) FUZZ_CHECK(sent_back(name, fields) == std::string(fields));

  for (auto candidate : {name, fields}) {
    FUZZ_CHECK(rr::web::looks_like_session_token(candidate) == (candidate.size() == 64 && is_lower_hex(candidate)));
  }
  return 0;
}
