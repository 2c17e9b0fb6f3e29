// Finished-response memory: keys scoped per user over the shared TTL cache.
#include "common/idempotency/finished_responses.hpp"

#include <utility>

namespace rr::idempotency {

std::string FinishedResponses::cache_key(std::int64_t user_id, std::string_view idempotency_key) {
  // Keys are scoped per user; the separator cannot occur in a user id.
  std::string key = std::to_string(user_id);
  key += ':';
  key += idempotency_key;
  return key;
}

std::string FinishedResponses::fingerprint(std::string_view method, std::string_view path,
                                           std::string_view params_json) {
  std::string out;
  out.reserve(method.size() + path.size() + params_json.size() + 2);
  out.append(method).append(" ").append(path).append(" ").append(params_json);
  return out;
}

std::optional<FinishedResponse> FinishedResponses::find(std::int64_t user_id, std::string_view idempotency_key) {
  return cache_.find(cache_key(user_id, idempotency_key));
}

void FinishedResponses::remember(std::int64_t user_id, std::string_view idempotency_key, FinishedResponse response) {
  cache_.remember(cache_key(user_id, idempotency_key), std::move(response));
}

}  // namespace rr::idempotency
