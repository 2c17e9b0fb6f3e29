// Per-user counts of requests in progress.
#include "common/api/in_flight_per_user.hpp"

namespace rr::api {

std::shared_ptr<const InFlightPerUser::Slot> InFlightPerUser::try_acquire(std::int64_t user_id) {
  {
    std::lock_guard lock(mutex_);
    auto& count = counts_[user_id];
    if (count >= limit_) {
      if (count == 0) counts_.erase(user_id);  // a limit of 0 keeps nothing behind
      return nullptr;
    }
    ++count;
  }
  try {
    return std::make_shared<const Slot>(*this, user_id);
  } catch (...) {
    release(user_id);
    throw;
  }
}

std::size_t InFlightPerUser::in_flight(std::int64_t user_id) const {
  std::lock_guard lock(mutex_);
  auto it = counts_.find(user_id);
  return it == counts_.end() ? 0 : it->second;
}

void InFlightPerUser::release(std::int64_t user_id) {
  std::lock_guard lock(mutex_);
  auto it = counts_.find(user_id);
  if (it == counts_.end()) return;
  if (--it->second == 0) counts_.erase(it);
}

}  // namespace rr::api
