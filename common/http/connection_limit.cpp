// Connection accounting for the cap: which connections exist, which are busy, who goes first.
#include "common/http/connection_limit.hpp"

namespace rr::http {

ConnectionLimit::ConnectionLimit(std::size_t max_connections) : max_(max_connections) {}

ConnectionLimit::Admission ConnectionLimit::admit() {
  Admission admission;
  bool hit = false;
  bool refused = false;
  {
    std::lock_guard lock(mutex_);
    std::size_t open = idle_.size() + busy_.size() + evicting_.size();
    if (max_ > 0 && open >= max_) {
      hit = true;
      if (idle_.empty()) {
        refused = true;
        admission.admitted = false;
      } else {
        auto oldest = idle_.begin();
        admission.evicted = *oldest;
        evicting_.insert(*oldest);
        idle_.erase(oldest);
      }
    }
    if (admission.admitted) {
      admission.id = next_id_++;
      idle_.insert(admission.id);
    }
  }
  if (refused) {
    refused_.note(max_);
  } else if (hit) {
    cap_hit_.note(max_);
  }
  return admission;
}

void ConnectionLimit::busy(Id id) {
  std::lock_guard lock(mutex_);
  // A connection already chosen for eviction stays in evicting_: its owner lets the request
  // finish and closes it after the answer.
  if (idle_.erase(id) > 0) busy_.insert(id);
}

void ConnectionLimit::idle(Id id) {
  std::lock_guard lock(mutex_);
  if (busy_.erase(id) > 0) idle_.insert(id);
}

void ConnectionLimit::closed(Id id) {
  std::lock_guard lock(mutex_);
  idle_.erase(id);
  busy_.erase(id);
  evicting_.erase(id);
}

std::size_t ConnectionLimit::open() const {
  std::lock_guard lock(mutex_);
  return idle_.size() + busy_.size() + evicting_.size();
}

std::optional<std::size_t> descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::size_t>(limit.rlim_cur);
}

}  // namespace rr::http
