// Strict UTF-8 validation (RFC 3629): what a JSON text must be (RFC 8259 section 8.1).
#pragma once

#include <string_view>

namespace rr {

// False for a truncated or stray continuation byte, an overlong form, a UTF-16 surrogate
// (U+D800..U+DFFF) or anything above U+10FFFF.
bool is_valid_utf8(std::string_view text);

}  // namespace rr
