// At most N requests in progress per user, so one user's flood of slow requests (each waiting
// seconds on the payment provider) cannot take every worker and queue place from everyone else.
// A request counts from the moment its token's user is known until its handler is done.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace rr::api {

class InFlightPerUser {
 public:
  explicit InFlightPerUser(std::size_t limit) : limit_(limit) {}
  InFlightPerUser(const InFlightPerUser&) = delete;
  InFlightPerUser& operator=(const InFlightPerUser&) = delete;

  // One request's place; given back when the last copy of the pointer goes.
  class Slot {
   public:
    Slot(InFlightPerUser& owner, std::int64_t user_id) : owner_(owner), user_id_(user_id) {}
    ~Slot() { owner_.release(user_id_); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    InFlightPerUser& owner_;
    std::int64_t user_id_;
  };

  // A place for one more of this user's requests, or nullptr when the user is at the limit.
  // Never blocks for long (one short lock); safe on an I/O thread.
  std::shared_ptr<const Slot> try_acquire(std::int64_t user_id);
  std::size_t in_flight(std::int64_t user_id) const;
  std::size_t limit() const { return limit_; }

 private:
  void release(std::int64_t user_id);

  const std::size_t limit_;
  mutable std::mutex mutex_;
  // Only users with requests in progress: its size is bounded by the requests in progress.
  std::unordered_map<std::int64_t, std::size_t> counts_;
};

}  // namespace rr::api
