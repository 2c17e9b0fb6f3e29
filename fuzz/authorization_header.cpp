// The Authorization header's readers (parse_bearer_token, require_token_form in
// common/api_requests/): the bearer token the I/O thread checks before a worker looks it up.
// Input: each line is one Authorization header's value (none: no header; two lines: the header
// sent twice).
//
// Properties: a refusal is 401 authentication_error, and any but exactly one header is refused;
// an accepted token is what follows "Bearer " (the scheme in any case) and the spaces after it, so
// "Bearer " and the token read back to the same token; require_token_form passes exactly the
// tokens that have our tokens' form (looks_like_token).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/auth/tokens.hpp"
#include "common/http/message.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"

namespace {

rr::http::Request request_with(const std::vector<std::string>& values) {
  rr::http::Request request;
  request.method = "GET";
  request.target = request.path = "/rides";
  for (const auto& value : values) request.headers.emplace_back("Authorization", value);
  return request;
}

void check_refusal(const rr::api::ApiError& error) {
  FUZZ_CHECK(error.status == 401);
  FUZZ_CHECK(error.type == "authentication_error");
  FUZZ_CHECK(*error.what() != '\0');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  std::vector<std::string> values;
  while (!input.rest().empty() && values.size() < 3) values.emplace_back(input.line());
  auto request = request_with(values);

  std::string token;
  try {
    token = rr::api::parse_bearer_token(request);
  } catch (const rr::api::ApiError& error) {
    check_refusal(error);
    try {
      rr::api::require_token_form(request);
      FUZZ_CHECK(!"a header without a token passed the token's form check");
    } catch (const rr::api::ApiError& again) {
      check_refusal(again);
    }
    return 0;
  }
  FUZZ_CHECK(values.size() == 1);
  std::string_view value = values[0];
  FUZZ_CHECK(value.size() >= 7 && rr::http::iequals(value.substr(0, 7), "Bearer "));
  FUZZ_CHECK(token.empty() || token.front() != ' ');
  FUZZ_CHECK(value.ends_with(token));
  FUZZ_CHECK(value.substr(7, value.size() - 7 - token.size()).find_first_not_of(' ') == std::string_view::npos);
  FUZZ_CHECK(rr::api::parse_bearer_token(request_with({"Bearer " + token})) == token);

  bool has_form = true;
  try {
    rr::api::require_token_form(request);
  } catch (const rr::api::ApiError& error) {
    check_refusal(error);
    has_form = false;
  }
  FUZZ_CHECK(has_form == rr::auth::looks_like_token(token));
  return 0;
}
