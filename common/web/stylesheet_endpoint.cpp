// The stylesheet's answer.
#include "common/web/stylesheet_endpoint.hpp"

#include "common/web/page_response.hpp"
#include "common/web/pages.hpp"

namespace rr::web {

std::optional<http::Response> StylesheetEndpoint::answer_in_memory(const http::Request& request,
                                                                   const flows::PathArguments& arguments) {
  return handle(request, arguments);
}

http::Response StylesheetEndpoint::handle(const http::Request&, const flows::PathArguments&) {
  http::Response response{200, "text/css; charset=utf-8", {}, std::string(stylesheet())};
  add_page_headers(response);
  return response;
}

}  // namespace rr::web
