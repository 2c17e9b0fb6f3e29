// The provider's answer read with RapidJSON's SAX reader (see provider_answer.hpp).
#include "common/payments/provider_answer.hpp"

#include <rapidjson/allocators.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

namespace rr::payments {
namespace {

// Depth 1 is the top-level object, depth 2 an object directly inside it. `next` names what the
// coming value is, from the key just read; everything else is skipped.
class AnswerFieldsHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, AnswerFieldsHandler> {
 public:
  AnswerFieldsHandler(ProviderAnswerFields& fields, bool id_only) : fields_(fields), id_only_(id_only) {}
  // Whether the reader was stopped on purpose: the id was all that was asked for.
  bool stopped_at_id() const { return stopped_at_id_; }

  bool Key(const char* text, rapidjson::SizeType length, bool) {
    std::string_view key(text, length);
    next_ = Field::none;
    if (depth_ == 1 && !in_error_) {
      if (key == "id" && !seen_id_) next_ = Field::id;
      if (key == "error" && !seen_error_) next_ = Field::error;
      seen_id_ = seen_id_ || key == "id";
      seen_error_ = seen_error_ || key == "error";
    } else if (depth_ == 2 && in_error_) {
      if (key == "message" && !seen_message_) next_ = Field::message;
      if (key == "code" && !seen_code_) next_ = Field::code;
      if (key == "type" && !seen_type_) next_ = Field::type;
      seen_message_ = seen_message_ || key == "message";
      seen_code_ = seen_code_ || key == "code";
      seen_type_ = seen_type_ || key == "type";
    }
    return true;
  }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    if (next_ == Field::id) {
      fields_.id.assign(text, length);
      if (id_only_) {
        stopped_at_id_ = true;
        return false;  // ends the reading here
      }
    }
    if (next_ == Field::message) fields_.message.assign(text, length);
    if (next_ == Field::code) fields_.code.assign(text, length);
    if (next_ == Field::type) fields_.type.assign(text, length);
    next_ = Field::none;
    return true;
  }
  bool StartObject() {
    in_error_ = in_error_ || (depth_ == 1 && next_ == Field::error);
    next_ = Field::none;
    ++depth_;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (--depth_ == 1) in_error_ = false;
    return true;
  }
  bool StartArray() {
    next_ = Field::none;
    ++depth_;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    --depth_;
    return true;
  }
  // Numbers, booleans and null: a value of a type we do not read.
  bool Default() {
    next_ = Field::none;
    return true;
  }

 private:
  enum class Field { none, id, error, message, code, type };
  ProviderAnswerFields& fields_;
  const bool id_only_;
  bool stopped_at_id_ = false;
  int depth_ = 0;
  bool in_error_ = false;
  Field next_ = Field::none;
  bool seen_id_ = false, seen_error_ = false, seen_message_ = false, seen_code_ = false, seen_type_ = false;
};

}  // namespace

ProviderAnswerFields read_provider_answer(std::string_view body, bool id_only) {
  ProviderAnswerFields fields;
  // The reader's stack holds the string being read and the nesting: a buffer on this stack
  // covers any answer of a sane size before the allocator asks the heap for more.
  char stack_buffer[2048];
  rapidjson::MemoryPoolAllocator<> stack_allocator(stack_buffer, sizeof stack_buffer);
  rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>> reader(
      &stack_allocator, 512);
  rapidjson::MemoryStream stream(body.data(), body.size());
  AnswerFieldsHandler handler(fields, id_only);
  // Iterative: an answer may be megabytes of '[' (the HTTP client takes up to 8 MiB), and the
  // recursive reader spends a stack frame per level, on a fiber's stack of 256 KiB.
  // RapidJSON's streams end at a NUL byte, which JSON never holds raw: a body is JSON only when its
  // value ends at the body's end, not at a NUL with more bytes after it.
  bool whole = reader.Parse<rapidjson::kParseIterativeFlag>(stream, handler) && stream.Tell() == body.size();
  if (!whole && !handler.stopped_at_id()) return {};
  fields.json = true;
  return fields;
}

}  // namespace rr::payments
