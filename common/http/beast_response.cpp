// Building Beast's message field by field; Beast decides Connection and Content-Length.
#include "common/http/beast_response.hpp"

#include <boost/beast/http/field.hpp>

#include "common/base/log.hpp"
#include "common/http/response_wire.hpp"

namespace rr::http {
namespace {

namespace bhttp = boost::beast::http;

bool has_line_break(std::string_view text) { return text.find_first_of("\r\n") != std::string_view::npos; }

}  // namespace

BeastResponse beast_response(Response response, bool keep_alive, bool head) {
  BeastResponse out;
  out.version(11);
  int status = response.status >= 100 && response.status <= 999 ? response.status : 500;
  out.result(static_cast<unsigned>(status));
  out.set(bhttp::field::server, kServerName);
  if (!response.content_type.empty() && !has_line_break(response.content_type)) {
    out.set(bhttp::field::content_type, response.content_type);
  }
  for (const auto& [name, value] : response.headers) {
    // A line break in a header would let the handler's data split the response.
    if (name.empty() || has_line_break(name) || has_line_break(value)) {
      log::warn("dropping a response header with a line break", {{"header", name}});
      continue;
    }
    out.insert(name, value);
  }
  out.keep_alive(keep_alive);
  bool bodiless = status < 200 || status == 204 || status == 304;
  if (bodiless) {
    out.content_length(boost::none);
  } else if (head) {
    out.content_length(response.body.size());
  } else {
    out.body() = std::move(response.body);
    out.prepare_payload();
  }
  return out;
}

}  // namespace rr::http
