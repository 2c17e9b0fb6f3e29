// RapidJSON with validation, numbers as text and no recursion, then one walk for what it does
// not check: escapes that decode to invalid UTF-8, and repeated keys.
#include "common/api_requests/strict_json.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/base/utf8.hpp"

namespace rr::api {
namespace {

// Iterative: a 64 KiB body of '[' must not become 64 Ki stack frames. Stop when done: what follows
// the value is checked here against the body's length, not by RapidJSON against a NUL.
constexpr unsigned kParseFlags = rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag;

ApiError not_utf8() { return ApiError(400, "invalid_request_error", "The JSON body is not valid UTF-8."); }

ApiError malformed(std::string_view why) {
  return ApiError(400, "invalid_request_error", "The JSON body is malformed: " + std::string(why));
}

std::string_view text_of(const rapidjson::Value& value) { return {value.GetString(), value.GetStringLength()}; }

// A NUL (sent as \u0000) ends the text for C strings, PostgreSQL (which refuses it in text) and
// many logs, so two readers would see two different keys or values.
void check_text(std::string_view text) {
  if (!utf8::is_valid(text)) throw not_utf8();
  if (text.find('\0') != std::string_view::npos) {
    throw ApiError(400, "invalid_request_error", "The JSON body holds a NUL character (\\u0000) in a key or string.");
  }
}

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr std::string_view kJsonWhitespace = " \t\n\r";

// Iterative for the same reason as the parse.
void check_strings_and_keys(const rapidjson::Value& root) {
  // Room for a request's usual body at once: growing from empty was a dozen allocations a body.
  std::vector<const rapidjson::Value*> pending;
  pending.reserve(16);
  pending.push_back(&root);
  std::vector<std::string_view> names;
  names.reserve(16);
  while (!pending.empty()) {
    const rapidjson::Value& value = *pending.back();
    pending.pop_back();
    if (value.IsString()) {
      check_text(text_of(value));
    } else if (value.IsArray()) {
      for (const auto& element : value.GetArray()) pending.push_back(&element);
    } else if (value.IsObject()) {
      names.clear();
      for (const auto& member : value.GetObject()) {
        check_text(text_of(member.name));
        names.push_back(text_of(member.name));
        pending.push_back(&member.value);
      }
      std::sort(names.begin(), names.end());
      if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
        throw ApiError(400, "invalid_request_error", "The JSON body names a key twice in one object.");
      }
    }
  }
}

}  // namespace

rapidjson::Document parse_strict_json(const std::string& body) {
  // Raw bytes first: RapidJSON validates inside strings only, and reports a bad byte elsewhere as
  // a syntax error; one message for both.
  if (!utf8::is_valid(body)) throw not_utf8();
  // RFC 8259 section 8.1: a parser may ignore a byte-order mark or refuse it; RapidJSON refuses
  // it as a syntax error, others skip it. Named here so the client learns what to remove.
  if (std::string_view(body).starts_with(kByteOrderMark)) {
    throw ApiError(400, "invalid_request_error",
                   "The JSON body starts with a byte-order mark; send UTF-8 without one.");
  }
  // RapidJSON's streams answer NUL at their end, so it takes a NUL for the end of the body: a valid
  // object, a NUL and anything at all would read as the object alone, where a proxy, a log or
  // another parser reads on. JSON allows a raw NUL nowhere (in a string it must be escaped).
  if (body.find('\0') != std::string::npos) throw malformed("it holds a NUL byte, which JSON allows nowhere.");
  rapidjson::Document doc;
  rapidjson::MemoryStream stream(body.data(), body.size());
  doc.ParseStream<kParseFlags>(stream);
  if (doc.HasParseError()) {
    if (doc.GetParseError() == rapidjson::kParseErrorNumberTooBig) {
      throw ApiError(422, "invalid_request_error", "A number in the JSON body is not a finite decimal number.");
    }
    throw malformed(rapidjson::GetParseError_En(doc.GetParseError()));
  }
  // The body is read to its end, by its length: after the value only whitespace, whatever the
  // parser would have taken for the end of its input.
  if (body.find_first_not_of(kJsonWhitespace, stream.Tell()) != std::string::npos) {
    throw malformed(rapidjson::GetParseError_En(rapidjson::kParseErrorDocumentRootNotSingular));
  }
  check_strings_and_keys(doc);
  return doc;
}

}  // namespace rr::api
