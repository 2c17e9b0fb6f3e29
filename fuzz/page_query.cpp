// GET /rides's query and GET /rides/{id}'s id (common/api_requests/page_query.*, query_param).
// Input: the query string (after '?') on the first line, then the id's text.
//
// Properties: a bad query is 400 and a bad id 404, nothing else; a query parameter is read as the
// form codec decodes the query, refused when named twice; an accepted page has 1 <= limit <= 100
// and a positive cursor, and its canonical query (limit=N&cursor=M) reads back to the same page; an
// accepted id is positive and its decimal text reads back to it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/page_query.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/http/form.hpp"
#include "common/http/message.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"

namespace {

rr::http::Request request_with_query(std::string query) {
  rr::http::Request request;
  request.method = "GET";
  request.path = "/rides";
  request.query = std::move(query);
  request.target = request.path + "?" + request.query;
  return request;
}

// query_param against the codec: absent, the one value, or 400 for a malformed query or a repeat.
void check_query_param(const rr::http::Request& request, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> fields;
  bool readable = rr::http::form_decode(request.query, fields);
  std::size_t count = 0;
  std::string value;
  for (const auto& field : fields) {
    if (field.first == name) {
      ++count;
      value = field.second;
    }
  }
  try {
    auto found = rr::api::query_param(request, name);
    FUZZ_CHECK(readable && count <= 1);
    FUZZ_CHECK(found.has_value() == (count == 1));
    if (found) FUZZ_CHECK(*found == value);
  } catch (const rr::api::ApiError& error) {
    FUZZ_CHECK(error.status == 400);
    FUZZ_CHECK(!readable || count > 1);
  }
}

void check_page(const rr::http::Request& request) {
  rr::api::PageQuery page;
  try {
    page = rr::api::parse_page_query(request);
  } catch (const rr::api::ApiError& error) {
    FUZZ_CHECK(error.status == 400);
    return;
  }
  FUZZ_CHECK(page.limit >= 1 && page.limit <= rr::api::kMaxPageSize);
  FUZZ_CHECK(!page.cursor || *page.cursor >= 1);
  std::string canonical = "limit=" + std::to_string(page.limit);
  if (page.cursor) canonical += "&cursor=" + std::to_string(*page.cursor);
  auto again = rr::api::parse_page_query(request_with_query(canonical));
  FUZZ_CHECK(again.limit == page.limit);
  FUZZ_CHECK(again.cursor == page.cursor);
}

void check_ride_id(std::string_view text) {
  std::int64_t id = 0;
  try {
    id = rr::api::parse_ride_id(text);
  } catch (const rr::api::ApiError& error) {
    FUZZ_CHECK(error.status == 404);
    return;
  }
  FUZZ_CHECK(id > 0);
  FUZZ_CHECK(rr::api::parse_ride_id(std::to_string(id)) == id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  auto request = request_with_query(std::string(input.line()));
  check_page(request);
  check_query_param(request, "limit");
  check_query_param(request, "cursor");
  // And a name the client chose: the first one in its query.
  std::vector<std::pair<std::string, std::string>> fields;
  if (rr::http::form_decode(request.query, fields) && !fields.empty()) check_query_param(request, fields[0].first);
  check_ride_id(input.rest());
  return 0;
}
