// The well-formed byte sequences of RFC 3629 section 4, byte by byte.
#include "common/base/utf8.hpp"

namespace rr {

bool is_valid_utf8(std::string_view text) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  auto continuation = [&](std::size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
  std::size_t i = 0;
  while (i < text.size()) {
    unsigned char lead = byte(i);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The second byte's range depends on the lead: it is what excludes overlongs, surrogates and
    // code points past U+10FFFF.
    unsigned char low = 0x80, high = 0xBF;
    std::size_t length = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return false;  // 0x80..0xC1 (continuation or overlong lead) and 0xF5..0xFF
    }
    if (i + 1 >= text.size() || byte(i + 1) < low || byte(i + 1) > high) return false;
    for (std::size_t k = 2; k < length; ++k) {
      if (!continuation(i + k)) return false;
    }
    i += length;
  }
  return true;
}

}  // namespace rr
