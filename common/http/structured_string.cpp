// The sf-string grammar (RFC 8941 sections 3.3.3, 4.1.6 and 4.2.5), written as the RFC's
// algorithms read so that the two can be compared line by line.
#include "common/http/structured_string.hpp"

namespace rr::http {
namespace {

// unescaped / escaped's characters: VCHAR and SP, %x20-7E.
bool is_string_char(char c) { return c >= 0x20 && c <= 0x7e; }

std::string_view without_spaces_around(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<std::string> parse_sf_string(std::string_view field_value) {
  std::string_view input = without_spaces_around(field_value);
  if (input.empty() || input.front() != '"') return std::nullopt;
  input.remove_prefix(1);
  std::string text;
  while (!input.empty()) {
    char c = input.front();
    input.remove_prefix(1);
    if (c == '\\') {
      if (input.empty() || (input.front() != '"' && input.front() != '\\')) return std::nullopt;
      text += input.front();
      input.remove_prefix(1);
    } else if (c == '"') {
      // The item ends here; parameters (";name=value") would follow, and this reader takes none.
      if (!input.empty()) return std::nullopt;
      return text;
    } else if (!is_string_char(c)) {
      return std::nullopt;
    } else {
      text += c;
    }
  }
  return std::nullopt;  // no closing quote
}

std::optional<std::string> serialize_sf_string(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (char c : text) {
    if (!is_string_char(c)) return std::nullopt;
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace rr::http
