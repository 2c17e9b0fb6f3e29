// The fast path of the response writer: the status line and fields in Beast's order and
// spelling, with the reason phrases from Beast's own table.
#include "common/http/response_wire.hpp"

#include <boost/beast/http/status.hpp>
#include <charconv>

namespace rr::http {
namespace {

namespace bhttp = boost::beast::http;

// RFC 9110 section 5.6.2.
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// Visible characters, spaces and tabs inside, nothing Beast would trim or refuse.
bool is_plain_value(std::string_view text) {
  if (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.back() == ' ' || text.back() == '\t')) {
    return false;
  }
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// Fields Beast sets or rewrites itself (Server, Content-Type, framing and connection): a response
// that carries its own goes through Beast, whose rules then decide.
bool is_framing_field(std::string_view name) {
  for (std::string_view own : {"Server", "Content-Type", "Content-Length", "Transfer-Encoding", "Connection"}) {
    if (iequals(name, own)) return true;
  }
  return false;
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

}  // namespace

bool append_wire_response(std::string& out, const Response& response, bool keep_alive, bool head) {
  int status = response.status;
  // 1xx, 204 and 304 have no body and no Content-Length; unknown codes have no reason phrase.
  if (status < 200 || status > 999 || status == 204 || status == 304) return false;
  std::string_view reason = bhttp::obsolete_reason(static_cast<bhttp::status>(status));
  if (bhttp::int_to_status(static_cast<unsigned>(status)) == bhttp::status::unknown) return false;
  if (!response.content_type.empty() && !is_plain_value(response.content_type)) return false;
  for (const auto& [name, value] : response.headers) {
    if (!is_token(name) || is_framing_field(name) || !is_plain_value(value)) return false;
  }

  char length[24];
  auto length_end = std::to_chars(length, length + sizeof length, response.body.size()).ptr;
  std::size_t size = 64 + reason.size() + response.content_type.size() + (head ? 0 : response.body.size());
  for (const auto& [name, value] : response.headers) size += name.size() + value.size() + 4;
  out.reserve(out.size() + size);

  char code[3] = {static_cast<char>('0' + status / 100), static_cast<char>('0' + status / 10 % 10),
                  static_cast<char>('0' + status % 10)};
  out.append("HTTP/1.1 ").append(code, 3).append(" ").append(reason).append("\r\n");
  append_field(out, "Server", kServerName);
  if (!response.content_type.empty()) append_field(out, "Content-Type", response.content_type);
  for (const auto& [name, value] : response.headers) append_field(out, name, value);
  if (!keep_alive) append_field(out, "Connection", "close");
  append_field(out, "Content-Length", std::string_view(length, static_cast<std::size_t>(length_end - length)));
  out.append("\r\n");
  if (!head) out.append(response.body);
  return true;
}

}  // namespace rr::http
