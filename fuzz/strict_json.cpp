// The strict JSON body reader (common/api_requests/strict_json.*), over any bytes a client can send.
// Refused bodies get 400 (or 422 for a number too large). An accepted body is a JSON object to an
// independent reader (Boost.JSON, which shares no code with RapidJSON): the same members, in order,
// with the same names (each once, valid UTF-8 without NUL), kinds and texts (a number's text as
// sent). Written back from what was read, it is accepted again and reads the same.
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/strict_json.hpp"
#include "common/base/utf8.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/reference_json.hpp"

namespace {

using rr::api::JsonKind;
using rr::api::JsonObject;

std::string_view text_of(const boost::json::string& text) { return {text.data(), text.size()}; }

JsonKind kind_of(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::null:
      return JsonKind::null;
    case boost::json::kind::bool_:
      return JsonKind::boolean;
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
      return JsonKind::number;
    case boost::json::kind::string:
      return JsonKind::string;
    case boost::json::kind::array:
      return JsonKind::array;
    case boost::json::kind::object:
      return JsonKind::object;
  }
  return JsonKind::null;
}

// The text of a JSON number as RFC 8259 section 6 writes it.
bool is_json_number(std::string_view text) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  if (i < text.size() && text[i] == '-') ++i;
  std::size_t start = i;
  std::size_t integer = digits();
  if (integer == 0 || (integer > 1 && text[start] == '0')) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

// The object written back: names and strings escaped by Boost.JSON, numbers as their text, nested
// values (of which only the kind is kept) as an empty array or object of that kind: written from
// the reference, a huge number inside one comes back as a double Boost prints out of range.
std::string written(const JsonObject& object, const boost::json::object& reference) {
  std::string text = "{";
  for (std::size_t i = 0; i < object.members.size(); ++i) {
    const auto& member = object.members[i];
    if (i > 0) text += ',';
    text += boost::json::serialize(boost::json::string(member.name));
    text += ':';
    if (member.kind == JsonKind::number) {
      text += member.text;
    } else if (member.kind == JsonKind::string) {
      text += boost::json::serialize(boost::json::string(member.text));
    } else if (member.kind == JsonKind::array) {
      text += "[]";
    } else if (member.kind == JsonKind::object) {
      text += "{}";
    } else {
      text += boost::json::serialize(reference.at(member.name));
    }
  }
  return text + "}";
}

void check_same(const JsonObject& ours, const JsonObject& again) {
  FUZZ_CHECK(ours.members.size() == again.members.size());
  for (std::size_t i = 0; i < ours.members.size(); ++i) {
    FUZZ_CHECK(ours.members[i].name == again.members[i].name);
    FUZZ_CHECK(ours.members[i].kind == again.members[i].kind);
    FUZZ_CHECK(ours.members[i].text == again.members[i].text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  JsonObject object;
  try {
    object = rr::api::parse_strict_json_object(body);
  } catch (const rr::api::ApiError& error) {
    FUZZ_CHECK(error.status == 400 || error.status == 422);
    FUZZ_CHECK(error.type == "invalid_request_error");
    FUZZ_CHECK(*error.what() != '\0');
    return 0;
  }
  auto reference = rr::fuzz::reference_json(body);
  if (reference.undecided()) return 0;
  FUZZ_CHECK(reference.value && reference.value->is_object());
  const auto& members = reference.value->get_object();
  // Boost.JSON keeps the last of a repeated key, so equal sizes also say no key was repeated.
  FUZZ_CHECK(members.size() == object.members.size());
  for (const auto& member : object.members) {
    FUZZ_CHECK(rr::utf8::is_valid(member.name) && member.name.find('\0') == std::string::npos);
    FUZZ_CHECK(object.find(member.name) == &member);
    const auto* value = members.if_contains(member.name);
    FUZZ_CHECK(value != nullptr);
    FUZZ_CHECK(kind_of(*value) == member.kind);
    if (member.kind == JsonKind::string) {
      FUZZ_CHECK(text_of(value->get_string()) == member.text);
      FUZZ_CHECK(rr::utf8::is_valid(member.text) && member.text.find('\0') == std::string::npos);
    } else if (member.kind == JsonKind::number) {
      FUZZ_CHECK(is_json_number(member.text));
    } else {
      FUZZ_CHECK(member.text.empty());
    }
  }

  std::string text = written(object, members);
  JsonObject again;
  try {
    again = rr::api::parse_strict_json_object(text);
  } catch (const rr::api::ApiError&) {
    FUZZ_CHECK(!"an object we accepted, written back, is refused");
  }
  check_same(object, again);
  return 0;
}
