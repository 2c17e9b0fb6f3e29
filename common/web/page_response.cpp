// The rider pages' response headers.
#include "common/web/page_response.hpp"

namespace rr::web {

void add_page_headers(http::Response& response) {
  response.with_header("Content-Security-Policy", kContentSecurityPolicy)
      .with_header("Referrer-Policy", "no-referrer")
      .with_header("X-Content-Type-Options", "nosniff")
      .with_header("Cache-Control", "no-store");
}

http::Response page(int status, std::string html) {
  http::Response response{status, "text/html; charset=utf-8", {}, std::move(html)};
  add_page_headers(response);
  return response;
}

http::Response see_other(std::string location) {
  http::Response response{303, "text/plain; charset=utf-8", {}, ""};
  response.with_header("Location", std::move(location));
  add_page_headers(response);
  return response;
}

}  // namespace rr::web
