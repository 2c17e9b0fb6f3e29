// RFC 8941 Strings (sf-string), both ways: the grammar alone, with no opinion on what a field
// using it may hold (the Idempotency-Key's bounds are the API's, in common/api_requests/).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rr::http {

// A field value that is one String Item without parameters, as RFC 8941 section 4.2 parses it
// (leading and trailing spaces discarded): its text with the escapes undone. Nothing for anything
// else: no opening or closing quote, text after the closing quote, a character outside printable
// ASCII and space, or a backslash before anything but '"' and '\'.
std::optional<std::string> parse_sf_string(std::string_view field_value);

// `text` as an sf-string (RFC 8941 section 4.1.6): in quotes, with '"' and '\' escaped. Nothing
// when `text` holds a character no sf-string can carry (controls, DEL, bytes above 0x7e).
std::optional<std::string> serialize_sf_string(std::string_view text);

}  // namespace rr::http
