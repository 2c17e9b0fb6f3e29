// The rules, in the order a request is refused: framing first (a smuggled request must never be
// answered as anything else), then Host, then what the client asks us to expect or decode.
#include "common/http/request_framing.hpp"

namespace rr::http {
namespace {

std::string_view trim_ows(std::string_view text) {
  auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// The elements of every field with this name, in order, as one comma-separated list (RFC 9110
// section 5.3); empty elements are dropped as section 5.6.1 allows.
std::vector<std::string_view> list_elements(const RequestHead& head, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& [field, value] : head.fields) {
    if (!iequals(field, name)) continue;
    std::string_view rest = value;
    for (;;) {
      auto comma = rest.find(',');
      auto element = trim_ows(rest.substr(0, comma));
      if (!element.empty()) out.push_back(element);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

// How many fields have this name, and the first one's value: all the rules below need, without
// collecting the values (every request passes these checks).
struct FieldValues {
  std::size_t count = 0;
  std::string_view first;
};

FieldValues values_of(const RequestHead& head, std::string_view name) {
  FieldValues out;
  for (const auto& [field, value] : head.fields) {
    if (!iequals(field, name)) continue;
    if (out.count++ == 0) out.first = value;
  }
  return out;
}

// uri-host [":" port] (RFC 3986 section 3.2.2): reg-name, IPv4 or a bracketed IP literal. No
// userinfo, no whitespace; empty is allowed for targets without an authority.
bool is_valid_host(std::string_view host) {
  for (unsigned char c : host) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   std::string_view("-._~%!$&'()*+,;=:[]").find(static_cast<char>(c)) != std::string_view::npos;
    if (!allowed) return false;
  }
  return true;
}

HeadRejection bad_request(std::string message) { return HeadRejection{400, std::move(message), {}}; }

// Beast frames a request by "chunked" when it is the last coding and by Content-Length otherwise,
// or as bodiless when neither: any other Transfer-Encoding would be read one way here and another
// way by a proxy in front of us. Only the one shape everyone agrees on is accepted.
std::optional<HeadRejection> check_framing(const RequestHead& head) {
  auto encodings = values_of(head, "Transfer-Encoding");
  if (encodings.count == 0) return std::nullopt;
  if (head.version < 11) {
    // HTTP/1.0 has no chunked coding: RFC 9112 section 6.1 calls such framing faulty.
    return bad_request("Transfer-Encoding is not allowed in an HTTP/1.0 request.");
  }
  if (values_of(head, "Content-Length").count > 0) {
    return bad_request("A request must not carry both Transfer-Encoding and Content-Length.");
  }
  if (encodings.count != 1 || !iequals(trim_ows(encodings.first), "chunked")) {
    return bad_request("Transfer-Encoding must be chunked alone.");
  }
  return std::nullopt;
}

// RFC 9112 section 5.2 lets a server replace obs-fold with spaces, but a proxy that does not
// would read other fields (or another Host) than we do.
std::optional<HeadRejection> check_folding(const RequestHead& head) {
  if (head.folded_field) return bad_request("A header field is folded over several lines (obs-fold); send it on one.");
  return std::nullopt;
}

// RFC 9112 section 3.2: a 1.1 request without Host, or any request with two, is 400.
std::optional<HeadRejection> check_host(const RequestHead& head) {
  auto hosts = values_of(head, "Host");
  if (hosts.count == 0) {
    if (head.version >= 11) return bad_request("An HTTP/1.1 request needs a Host header.");
    return std::nullopt;
  }
  if (hosts.count > 1) return bad_request("A request must have one Host header.");
  if (!is_valid_host(trim_ows(hosts.first))) return bad_request("The Host header is not a valid host.");
  return std::nullopt;
}

// 100-continue is the only expectation HTTP defines and the only one we meet (RFC 9110 10.1.1).
std::optional<HeadRejection> check_expect(const RequestHead& head) {
  for (auto expectation : list_elements(head, "Expect")) {
    if (!iequals(expectation, "100-continue")) {
      return HeadRejection{417, "The only expectation supported is 100-continue.", {}};
    }
  }
  return std::nullopt;
}

bool announces_body(const RequestHead& head) {
  for (const auto& [field, value] : head.fields) {
    if (iequals(field, "Transfer-Encoding")) return true;
    if (iequals(field, "Content-Length") && trim_ows(value).find_first_not_of('0') != std::string_view::npos)
      return true;
  }
  return false;
}

// No handler decodes compressed bodies: one would read compressed bytes as a form or JSON and
// answer 422 (or worse, accept something the client never meant). RFC 9110 section 15.5.16.
std::optional<HeadRejection> check_content_encoding(const RequestHead& head) {
  if (!announces_body(head)) return std::nullopt;
  for (auto coding : list_elements(head, "Content-Encoding")) {
    if (!iequals(coding, "identity")) {
      return HeadRejection{
          415, "Request bodies must not be content-encoded; send the body as is.", {{"Accept-Encoding", "identity"}}};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<HeadRejection> check_request_trailer(const RequestTrailer& trailer) {
  if (trailer.folded_field) {
    return bad_request("A trailer field is folded over several lines (obs-fold); send it on one.");
  }
  return std::nullopt;
}

std::optional<HeadRejection> check_request_head(const RequestHead& head) {
  for (auto check : {check_framing, check_folding, check_host, check_expect, check_content_encoding}) {
    if (auto rejection = check(head)) return rejection;
  }
  return std::nullopt;
}

}  // namespace rr::http
