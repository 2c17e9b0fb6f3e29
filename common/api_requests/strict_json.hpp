// Parsing a request body as JSON under the rules a hostile client meets: the body must be UTF-8
// throughout and is read to its end, an object may not name a key twice (parsers disagree on which
// one wins, so a proxy or log could read a different request from the one we act on), and a number
// keeps its text so one function (the form's) decides what a valid number is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rr::api {

// What a member's value is. A number is not a string, though both hand over text: a reader that
// wants text must be able to refuse a number, and one that wants a number may take either.
enum class JsonKind { null, boolean, number, string, array, object };

struct JsonMember {
  std::string name;
  JsonKind kind = JsonKind::null;
  // A string's decoded text, or a number's text exactly as sent; empty for the other kinds.
  std::string text;
};

// The members of a body's top-level object: the one level the request readers read. Nested
// values were checked as strictly, but only their kind is kept.
class JsonObject {
 public:
  // Nothing when the object has no member of this name.
  const JsonMember* find(std::string_view name) const;

  std::vector<JsonMember> members;
};

// Throws ApiError 400 when the body is malformed (also a raw NUL byte anywhere, and anything but
// whitespace after the value: RapidJSON takes a NUL for the end of its input, no proxy or log
// does), is not an object, is not valid UTF-8 (also through \u escapes, such as a lone surrogate)
// or repeats a key in any object; 422 for a number too large for a double, as the form answers a
// number it cannot read. Also 400 for a body that starts with a UTF-8 byte-order mark and for a
// key or string holding \u0000: readers differ on both.
JsonObject parse_strict_json_object(const std::string& body);

}  // namespace rr::api
