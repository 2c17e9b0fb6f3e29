// Text forms of the arguments that need more than an inline conversion.
#include "common/db/sql_arguments.hpp"

#include <charconv>

namespace rr::db::detail {

std::optional<std::string> call_argument(double value) {
  char text[32];
  auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

std::optional<std::string> call_argument(const Bytes& value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "\\x";
  text.reserve(2 + 2 * value.bytes.size());
  for (unsigned char byte : value.bytes) {
    text += kHex[byte >> 4];
    text += kHex[byte & 0x0f];
  }
  return text;
}

}  // namespace rr::db::detail
