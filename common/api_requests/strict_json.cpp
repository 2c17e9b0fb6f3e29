// RapidJSON's validating, iterative reader with numbers as text, and one handler of its events for
// what it does not check: escapes that decode to invalid UTF-8 or to NUL, and repeated keys.
#include "common/api_requests/strict_json.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <optional>

#include "common/api_requests/api_error.hpp"
#include "common/base/utf8.hpp"

namespace rr::api {
namespace {

// Iterative: a 64 KiB body of '[' must not become 64 Ki stack frames. Stop when done: what follows
// the value is checked here against the body's length, not by RapidJSON against a NUL.
constexpr unsigned kParseFlags = rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag;

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr std::string_view kJsonWhitespace = " \t\n\r";

ApiError not_utf8() { return ApiError(400, "invalid_request_error", "The JSON body is not valid UTF-8."); }

ApiError malformed(std::string_view why) {
  return ApiError(400, "invalid_request_error", "The JSON body is malformed: " + std::string(why));
}

// The parser's events, in one pass: every key and string checked, repeated keys found, the
// top-level object's members kept. A broken rule is remembered rather than thrown, so that a body
// that is not JSON at all is told so first.
class StrictHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, StrictHandler> {
 public:
  using SizeType = rapidjson::SizeType;

  StrictHandler() {
    // Room for a request's usual body at once, rather than growing step by step for each body.
    names_.reserve(16);
    root_.members.reserve(8);
  }

  bool Null() { return value(JsonKind::null); }
  bool Bool(bool) { return value(JsonKind::boolean); }
  bool RawNumber(const char* text, SizeType length, bool) { return value(JsonKind::number, {text, length}); }
  bool String(const char* text, SizeType length, bool) {
    check_text({text, length});
    return value(JsonKind::string, {text, length});
  }
  bool StartObject() {
    value(JsonKind::object);
    object_starts_.push_back(names_.size());
    ++depth_;
    return true;
  }
  bool Key(const char* text, SizeType length, bool) {
    std::string_view name(text, length);
    check_text(name);
    names_.emplace_back(name);
    if (depth_ == 1 && root_kind_ == JsonKind::object) root_.members.push_back({std::string(name), JsonKind::null, {}});
    return true;
  }
  bool EndObject(SizeType) {
    auto first = names_.begin() + static_cast<std::ptrdiff_t>(object_starts_.back());
    std::sort(first, names_.end());
    if (std::adjacent_find(first, names_.end()) != names_.end()) {
      remember(ApiError(400, "invalid_request_error", "The JSON body names a key twice in one object."));
    }
    names_.erase(first, names_.end());
    object_starts_.pop_back();
    --depth_;
    return true;
  }
  bool StartArray() {
    value(JsonKind::array);
    ++depth_;
    return true;
  }
  bool EndArray(SizeType) {
    --depth_;
    return true;
  }
  // Under kParseNumbersAsStringsFlag every number is a RawNumber. A number in any other form would
  // have lost its text: it ends the parse rather than pass unseen.
  bool Default() { return false; }

  JsonObject object() && {
    if (violation_) throw *violation_;
    if (root_kind_ != JsonKind::object)
      throw ApiError(400, "invalid_request_error", "The JSON body must be an object.");
    return std::move(root_);
  }

 private:
  bool value(JsonKind kind, std::string_view text = {}) {
    if (depth_ == 0) {
      root_kind_ = kind;
    } else if (depth_ == 1 && root_kind_ == JsonKind::object) {
      root_.members.back().kind = kind;
      root_.members.back().text.assign(text);
    }
    return true;
  }

  // A NUL (sent as \u0000) ends the text for C strings, PostgreSQL (which refuses it in text) and
  // many logs, so two readers would see two different keys or values.
  void check_text(std::string_view text) {
    if (!utf8::is_valid(text)) {
      remember(not_utf8());
    } else if (text.find('\0') != std::string_view::npos) {
      remember(
          ApiError(400, "invalid_request_error", "The JSON body holds a NUL character (\\u0000) in a key or string."));
    }
  }

  void remember(ApiError error) {
    if (!violation_) violation_ = std::move(error);
  }

  JsonObject root_;
  JsonKind root_kind_ = JsonKind::null;
  std::size_t depth_ = 0;
  // The keys of every object still open, innermost last, and where each open object's keys begin.
  std::vector<std::string> names_;
  std::vector<std::size_t> object_starts_;
  std::optional<ApiError> violation_;
};

}  // namespace

const JsonMember* JsonObject::find(std::string_view name) const {
  for (const auto& member : members) {
    if (member.name == name) return &member;
  }
  return nullptr;
}

JsonObject parse_strict_json_object(const std::string& body) {
  // Raw bytes first: RapidJSON validates inside strings only, and reports a bad byte elsewhere as
  // a syntax error; one message for both.
  if (!utf8::is_valid(body)) throw not_utf8();
  // RFC 8259 section 8.1: a parser may ignore a byte-order mark or refuse it; RapidJSON refuses
  // it as a syntax error, others skip it. Named here so the client learns what to remove.
  if (body.starts_with(kByteOrderMark)) {
    throw ApiError(400, "invalid_request_error",
                   "The JSON body starts with a byte-order mark; send UTF-8 without one.");
  }
  // RapidJSON's streams answer NUL at their end, so it takes a NUL for the end of the body: a valid
  // object, a NUL and anything at all would read as the object alone, where a proxy, a log or
  // another parser reads on. JSON allows a raw NUL nowhere (in a string it must be escaped).
  if (body.find('\0') != std::string::npos) throw malformed("it holds a NUL byte, which JSON allows nowhere.");
  StrictHandler handler;
  rapidjson::Reader reader;
  rapidjson::MemoryStream stream(body.data(), body.size());
  rapidjson::ParseResult result = reader.Parse<kParseFlags>(stream, handler);
  if (result.IsError()) {
    if (result.Code() == rapidjson::kParseErrorNumberTooBig) {
      throw ApiError(422, "invalid_request_error", "A number in the JSON body is not a finite decimal number.");
    }
    throw malformed(rapidjson::GetParseError_En(result.Code()));
  }
  // The body is read to its end, by its length: after the value only whitespace, whatever the
  // parser would have taken for the end of its input.
  if (body.find_first_not_of(kJsonWhitespace, stream.Tell()) != std::string::npos) {
    throw malformed(rapidjson::GetParseError_En(rapidjson::kParseErrorDocumentRootNotSingular));
  }
  return std::move(handler).object();
}

}  // namespace rr::api
