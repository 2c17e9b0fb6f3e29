// What every answer of the rider pages carries: no script may run, no other site may frame or
// post to them, nothing is cached or leaked in a Referer.
#pragma once

#include <string>

#include "common/http/message.hpp"

namespace rr::web {

inline constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'";

// Content-Security-Policy, Referrer-Policy, X-Content-Type-Options and Cache-Control: no-store.
void add_page_headers(http::Response& response);
// An HTML page (UTF-8) with the page headers.
http::Response page(int status, std::string html);
// 303 See Other to `location` (a path of ours), with the page headers: Post/Redirect/Get.
http::Response see_other(std::string location);

}  // namespace rr::web
