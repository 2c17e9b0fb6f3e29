// Parsing a request body as JSON under the rules a hostile client meets: the body must be UTF-8
// throughout, an object may not name a key twice (parsers disagree on which one wins, so a
// proxy or log could read a different request from the one we act on), and numbers are kept
// as their text so one function (the form's) decides what a valid number is.
#pragma once

#include <rapidjson/document.h>

#include <string>

namespace rr::api {

// Every number in the returned document is a string holding the number's text as sent.
// Throws ApiError 400 when the body is malformed (also a raw NUL byte anywhere, and anything but
// whitespace after the value: RapidJSON takes a NUL for the end of its input, no proxy or log
// does), not valid UTF-8 (also through \u escapes, such as a lone surrogate) or repeats a key in
// any object; 422 for a number too large for a double, as the form answers a number it cannot
// read. Also 400 for a body that starts with a UTF-8 byte-order mark and for a key or string
// holding \u0000: readers differ on both.
rapidjson::Document parse_strict_json(const std::string& body);

}  // namespace rr::api
