// The form codec on Boost.URL's percent-encoding. Splitting at '&' and '=' stays here: Boost.URL's
// query parser would also refuse bytes that are not legal in a URL (a raw space, '"', UTF-8),
// which a form body from a lenient client may carry and which decode to themselves.
#include "common/http/form.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/encoding_opts.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

namespace rr::http {
namespace {

namespace urls = boost::urls;

urls::encoding_opts plus_is_space() {
  urls::encoding_opts opts;
  opts.space_as_plus = true;
  return opts;
}

bool decode_component(std::string_view text, std::string& out) {
  auto escaped = urls::make_pct_string_view(text);
  if (!escaped) return false;
  out = escaped->decode(plus_is_space());
  return true;
}

}  // namespace

std::string form_encode(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out += '&';
    out += urls::encode(name, urls::unreserved_chars, plus_is_space());
    out += '=';
    out += urls::encode(value, urls::unreserved_chars, plus_is_space());
  }
  return out;
}

bool form_decode(std::string_view body, std::vector<std::pair<std::string, std::string>>& out) {
  std::size_t start = 0;
  while (start <= body.size()) {
    auto end = body.find('&', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view pair = body.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string name, value;
    if (!decode_component(pair.substr(0, eq), name)) return false;
    if (eq != std::string_view::npos && !decode_component(pair.substr(eq + 1), value)) return false;
    out.emplace_back(std::move(name), std::move(value));
  }
  return true;
}

}  // namespace rr::http
