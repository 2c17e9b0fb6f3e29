// The provider's answer read without a document (common/payments/provider_answer.*), against the
// reading it stands for: RapidJSON's DOM, with the members looked up as its header says (the
// first member of a name counts, one of another type reads as absent, a body that is not JSON
// gives no fields). Both with and without id_only: with it, a well-formed body gives the same id,
// and the fields of a body the DOM refuses may only come from a reading stopped at an "id".
#include <rapidjson/document.h>
#include <rapidjson/memorystream.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/payments/provider_answer.hpp"
#include "fuzz/support/fuzz_check.hpp"

namespace {

using rr::payments::ProviderAnswerFields;

// The first member named `name`, when it is a string; "" otherwise.
std::string string_member(const rapidjson::Value& object, const char* name) {
  // operator[] is FindMember's first match.
  if (!object.HasMember(name) || !object[name].IsString()) return {};
  return {object[name].GetString(), object[name].GetStringLength()};
}

struct Reference {
  ProviderAnswerFields fields;
  bool has_id = false;  // a top-level string "id", where an id_only reading stops
};

Reference dom_reading(std::string_view body) {
  Reference reference;
  // JSON never holds a raw NUL (RapidJSON's streams would end there, ignoring what follows).
  if (body.find('\0') != std::string_view::npos) return reference;
  rapidjson::Document document;
  // From the stream itself: Document::Parse(text, length) would skip a leading 0xEF, 0xBB or 0xBF
  // (its reading of a byte order mark), which our reader does not. Iterative, as a deep body must
  // not exhaust the stack of the reference either.
  rapidjson::MemoryStream stream(body.data(), body.size());
  document.ParseStream<rapidjson::kParseIterativeFlag>(stream);
  if (document.HasParseError()) return reference;
  reference.fields.json = true;
  if (!document.IsObject()) return reference;
  reference.has_id = document.HasMember("id") && document["id"].IsString();
  reference.fields.id = string_member(document, "id");
  if (document.HasMember("error") && document["error"].IsObject()) {
    reference.fields.message = string_member(document["error"], "message");
    reference.fields.code = string_member(document["error"], "code");
    reference.fields.type = string_member(document["error"], "type");
  }
  return reference;
}

bool same(const ProviderAnswerFields& a, const ProviderAnswerFields& b) {
  return a.json == b.json && a.id == b.id && a.message == b.message && a.code == b.code && a.type == b.type;
}

// Nesting deeper than this is not compared: the DOM's destructor recurses once per level.
constexpr std::size_t kMaxComparedNesting = 10000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto full = rr::payments::read_provider_answer(body, false);
  auto id_only = rr::payments::read_provider_answer(body, true);
  if (!full.json) FUZZ_CHECK(full.id.empty() && full.message.empty() && full.code.empty() && full.type.empty());

  if (static_cast<std::size_t>(std::count_if(body.begin(), body.end(), [](char c) { return c == '[' || c == '{'; })) >
      kMaxComparedNesting) {
    return 0;
  }
  auto reference = dom_reading(body);
  FUZZ_CHECK(same(full, reference.fields));
  if (reference.fields.json) {
    FUZZ_CHECK(id_only.json && id_only.id == reference.fields.id);
    // A body without a top-level string "id" is read to its end, like the full reading.
    if (!reference.has_id) FUZZ_CHECK(same(id_only, reference.fields));
  } else if (id_only.json) {
    // Read as JSON only because the reading stopped at the id, before the fault: there was an id.
    FUZZ_CHECK(body.find("\"") != std::string_view::npos);
  } else {
    FUZZ_CHECK(same(id_only, ProviderAnswerFields{}));
  }
  return 0;
}
