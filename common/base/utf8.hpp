// UTF-8 validation by the rules of RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF. Used where bytes from clients are written into text that must stay valid UTF-8 (log
// lines) and where a text must be UTF-8 to mean anything (a JSON body, RFC 8259 section 8.1).
#pragma once

#include <cstddef>
#include <string_view>

namespace rr::utf8 {

// The length (1 to 4) of the well-formed UTF-8 sequence that `text` starts with; 0 when it starts
// with a byte that is not the start of one (or `text` is empty).
std::size_t sequence_length(std::string_view text);

// True when all of `text` is well-formed UTF-8: false for a truncated sequence, a stray
// continuation byte, an overlong form, a UTF-16 surrogate or anything above U+10FFFF.
bool is_valid(std::string_view text);

// True for a two-byte sequence encoding a C1 control (U+0080 to U+009F): valid UTF-8, but
// terminals act on some of them (U+009B is CSI) as they do on ESC.
bool is_c1_control(std::string_view sequence);

}  // namespace rr::utf8
