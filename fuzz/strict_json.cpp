// The strict JSON body reader (common/api_requests/strict_json.*), over any bytes a client can send.
// Refused bodies get 400 (or 422 for a number too large); an accepted body holds only valid UTF-8
// without NUL in its strings and keys and no key twice in an object, is JSON to an independent
// reader (Boost.JSON) with the same values, and written back by RapidJSON reads again to the same
// document.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/strict_json.hpp"
#include "common/base/utf8.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/reference_json.hpp"

namespace {

std::string_view text_of(const rapidjson::Value& value) { return {value.GetString(), value.GetStringLength()}; }

std::string_view text_of(const boost::json::string& text) { return {text.data(), text.size()}; }

void check_text(std::string_view text) {
  FUZZ_CHECK(rr::utf8::is_valid(text));
  FUZZ_CHECK(text.find('\0') == std::string_view::npos);
}

// Numbers are kept as their text: the text of a JSON number, and nothing else, starts so.
bool looks_like_number(std::string_view text) {
  return !text.empty() && (text[0] == '-' || (text[0] >= '0' && text[0] <= '9'));
}

// Ours (numbers as text) against the reference, value by value. Iterative: the input may nest deep.
void check_same_values(const rapidjson::Value& ours_root, const boost::json::value& reference_root) {
  std::vector<std::pair<const rapidjson::Value*, const boost::json::value*>> pending{{&ours_root, &reference_root}};
  while (!pending.empty()) {
    auto [ours, reference] = pending.back();
    pending.pop_back();
    if (ours->IsObject()) {
      FUZZ_CHECK(reference->is_object());
      const auto& object = reference->get_object();
      FUZZ_CHECK(ours->MemberCount() == object.size());
      std::vector<std::string_view> names;
      for (const auto& member : ours->GetObject()) {
        check_text(text_of(member.name));
        names.push_back(text_of(member.name));
        auto found = object.find(boost::json::string_view(member.name.GetString(), member.name.GetStringLength()));
        FUZZ_CHECK(found != object.end());
        pending.emplace_back(&member.value, &found->value());
      }
      std::sort(names.begin(), names.end());
      FUZZ_CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
    } else if (ours->IsArray()) {
      FUZZ_CHECK(reference->is_array());
      const auto& array = reference->get_array();
      FUZZ_CHECK(ours->Size() == array.size());
      for (rapidjson::SizeType i = 0; i < ours->Size(); ++i) pending.emplace_back(&(*ours)[i], &array[i]);
    } else if (ours->IsString()) {
      check_text(text_of(*ours));
      if (reference->is_string()) {
        FUZZ_CHECK(text_of(*ours) == text_of(reference->get_string()));
      } else {
        FUZZ_CHECK(reference->is_number());
        FUZZ_CHECK(looks_like_number(text_of(*ours)));
      }
    } else if (ours->IsBool()) {
      FUZZ_CHECK(reference->is_bool() && reference->get_bool() == ours->GetBool());
    } else {
      FUZZ_CHECK(ours->IsNull() && reference->is_null());
    }
  }
}

std::string written(const rapidjson::Document& doc) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  FUZZ_CHECK(doc.Accept(writer));
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  rapidjson::Document doc;
  try {
    doc = rr::api::parse_strict_json(body);
  } catch (const rr::api::ApiError& error) {
    FUZZ_CHECK(error.status == 400 || error.status == 422);
    FUZZ_CHECK(error.type == "invalid_request_error");
    FUZZ_CHECK(*error.what() != '\0');
    return 0;
  }
  auto reference = rr::fuzz::reference_json(body);
  FUZZ_CHECK(reference.has_value());
  check_same_values(doc, *reference);

  // Written back (numbers now strings holding their text), it is accepted and reads the same.
  std::string text = written(doc);
  rapidjson::Document again;
  try {
    again = rr::api::parse_strict_json(text);
  } catch (const rr::api::ApiError&) {
    FUZZ_CHECK(!"a document we accepted, written back, is refused");
  }
  FUZZ_CHECK(again == doc);
  FUZZ_CHECK(written(again) == text);
  return 0;
}
