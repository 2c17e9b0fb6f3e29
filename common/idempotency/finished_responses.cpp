// Finished-response memory with expiry and a size bound.
#include "common/idempotency/finished_responses.hpp"

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
  if (capacity_ == 0) return std::nullopt;
  std::string key = cache_key(user_id, idempotency_key);
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  if (it->second.expires <= std::chrono::steady_clock::now()) {
    // Its slot in insertion_order_ goes when the bound reaches it; an erased key is skipped then.
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.response;
}

void FinishedResponses::remember(std::int64_t user_id, std::string_view idempotency_key, FinishedResponse response) {
  if (capacity_ == 0 || ttl_.count() <= 0) return;
  std::string key = cache_key(user_id, idempotency_key);
  auto expires = std::chrono::steady_clock::now() + ttl_;
  std::lock_guard lock(mutex_);
  auto [it, inserted] = entries_.insert_or_assign(key, Entry{std::move(response), expires});
  if (!inserted) return;  // already queued for the bound
  insertion_order_.push_back(std::move(key));
  // The queue may hold keys already erased by expiry; it never exceeds twice the capacity.
  while (entries_.size() > capacity_ || insertion_order_.size() > 2 * capacity_) {
    entries_.erase(insertion_order_.front());
    insertion_order_.pop_front();
  }
}

std::size_t FinishedResponses::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace rr::idempotency
