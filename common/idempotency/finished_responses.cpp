// Finished-response memory: keys scoped per user over the shared TTL cache.
#include "common/idempotency/finished_responses.hpp"

#include <charconv>
#include <utility>

namespace rr::idempotency {

void FinishedResponses::append_cache_key(std::string& out, std::int64_t user_id, std::string_view idempotency_key) {
  // Keys are scoped per user; the separator cannot occur in a user id.
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, user_id).ptr;
  out.append(digits, end);
  out += ':';
  out += idempotency_key;
}

std::string FinishedResponses::fingerprint(std::string_view method, std::string_view path,
                                           std::string_view params_json) {
  std::string out;
  out.reserve(method.size() + path.size() + params_json.size() + 2);
  out.append(method).append(" ").append(path).append(" ").append(params_json);
  return out;
}

// Each part ends with a NUL, which none of them can hold (a body could, but a body is the last
// part, so two different part lists still give different strings).
void FinishedResponses::append_request_bytes(std::string& out, std::string_view method, std::string_view target,
                                             std::string_view content_type, std::string_view body) {
  out.reserve(out.size() + method.size() + target.size() + content_type.size() + body.size() + 3);
  out.append(method).append(1, '\0').append(target).append(1, '\0').append(content_type).append(1, '\0').append(body);
}

std::string FinishedResponses::request_bytes(std::string_view method, std::string_view target,
                                             std::string_view content_type, std::string_view body) {
  std::string out;
  if (body.size() <= kMaxRequestBytesBody) append_request_bytes(out, method, target, content_type, body);
  return out;
}

bool FinishedResponses::same_request_bytes(std::string_view stored, std::string_view method, std::string_view target,
                                           std::string_view content_type, std::string_view body) {
  if (stored.empty() || body.size() > kMaxRequestBytesBody) return false;
  // Each thread builds the request's bytes in one string of its own: no allocation per replay.
  thread_local std::string bytes;
  bytes.clear();
  append_request_bytes(bytes, method, target, content_type, body);
  return stored == bytes;
}

std::shared_ptr<const FinishedResponse> FinishedResponses::find(std::int64_t user_id,
                                                                std::string_view idempotency_key) {
  // Each thread builds its lookup keys in one string of its own: no allocation per lookup.
  thread_local std::string key;
  key.clear();
  append_cache_key(key, user_id, idempotency_key);
  auto found = cache_.find(key);
  return found ? std::move(*found) : nullptr;
}

void FinishedResponses::remember(std::int64_t user_id, std::string_view idempotency_key, FinishedResponse response) {
  std::string key;
  append_cache_key(key, user_id, idempotency_key);
  cache_.remember(std::move(key), std::make_shared<const FinishedResponse>(std::move(response)));
}

}  // namespace rr::idempotency
