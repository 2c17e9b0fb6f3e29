// Table 3-7 of the Unicode standard ("Well-Formed UTF-8 Byte Sequences"), written out.
#include "common/base/utf8.hpp"

namespace rr::utf8 {
namespace {

bool in(unsigned char c, unsigned char low, unsigned char high) { return c >= low && c <= high; }

}  // namespace

std::size_t sequence_length(std::string_view text) {
  if (text.empty()) return 0;
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  // The ranges the second byte may take depend on the lead byte: that is what rules out
  // overlong forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4).
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;
  if (in(lead, 0xC2, 0xDF)) {
    length = 2;
  } else if (in(lead, 0xE0, 0xEF)) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (in(lead, 0xF0, 0xF4)) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;  // a continuation byte, C0, C1 or F5..FF: never a lead byte
  }
  if (text.size() < length || !in(byte(1), low, high)) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (!in(byte(i), 0x80, 0xBF)) return 0;
  }
  return length;
}

bool is_valid(std::string_view text) {
  while (!text.empty()) {
    std::size_t length = sequence_length(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

bool is_c1_control(std::string_view sequence) {
  return sequence.size() == 2 && static_cast<unsigned char>(sequence[0]) == 0xC2 &&
         static_cast<unsigned char>(sequence[1]) < 0xA0;
}

}  // namespace rr::utf8
