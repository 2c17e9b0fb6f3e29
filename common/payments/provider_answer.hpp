// What the Stripe client reads of a provider's JSON answer: the created object's id, and an
// error's message, code and type. Nothing else of a charge or refund object is read, so no document is
// built: RapidJSON's SAX reader walks the body once and keeps these four strings, its stack in a
// buffer of its own (a charge object is a few kilobytes of fields; building its DOM was most of
// what reading the answer cost a request).
#pragma once

#include <string>
#include <string_view>

namespace rr::payments {

struct ProviderAnswerFields {
  bool json = false;    // the body is well-formed JSON
  std::string id;       // the top-level object's "id", when a string
  std::string message;  // "error": {"message": ...}, when both are what they should be
  std::string code;     // "error": {"code": ...}
  std::string type;     // "error": {"type": ...}, e.g. idempotency_error
};

// Like looking the members up in a parsed document: the first member of a name counts, a member
// of another type reads as absent, and a body that is not JSON gives json = false and no fields.
// With `id_only` (a 2xx: only the created object's id matters) the reading stops at the top-level
// "id", Stripe's first member: the kilobytes after it are not walked, and json says the body was
// well-formed up to there.
ProviderAnswerFields read_provider_answer(std::string_view body, bool id_only = false);

}  // namespace rr::payments
