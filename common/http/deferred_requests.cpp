// Parking, resuming and dropping deferred requests.
#include "common/http/deferred_requests.hpp"

#include <utility>
#include <vector>

#include "common/base/error_body.hpp"

namespace rr::http {

// The continuation handed to the handler's Deferral::park. A ticket dropped without acting answers
// 503 rather than leave its client waiting until the server stops.
class DeferredRequests::Ticket : public Continuation {
 public:
  Ticket(std::weak_ptr<DeferredRequests> registry, std::uint64_t id) : registry_(std::move(registry)), id_(id) {}
  ~Ticket() override {
    Response response;
    response.status = 503;
    response.body = error_body("api_error", "The server could not finish waiting; retry shortly.");
    response.with_header("Retry-After", "1");
    act(std::move(response));
  }
  void answer(Response response) override { act(std::move(response)); }
  void run_again() override { act(std::nullopt); }

 private:
  void act(std::optional<Response> answer) {
    if (auto registry = registry_.lock()) registry->resume(id_, std::move(answer));
    registry_.reset();  // once
  }

  std::weak_ptr<DeferredRequests> registry_;
  const std::uint64_t id_;
};

std::shared_ptr<Continuation> DeferredRequests::park(Resume resume) {
  std::lock_guard lock(mutex_);
  if (closed_) return nullptr;
  auto id = next_id_++;
  parked_.emplace(id, std::move(resume));
  return std::make_shared<Ticket>(weak_from_this(), id);
}

void DeferredRequests::resume(std::uint64_t id, std::optional<Response> answer) {
  std::lock_guard lock(mutex_);
  auto it = parked_.find(id);
  if (it == parked_.end()) return;  // closed meanwhile, or acted already
  Resume resume = std::move(it->second);
  parked_.erase(it);
  resume(std::move(answer));
  // `resume`, and what it holds beyond what it posted on, goes with the lock still held (declared
  // after it): close() must not return while part of a request is alive here.
}

void DeferredRequests::close() {
  std::unordered_map<std::uint64_t, Resume> dropped;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    dropped.swap(parked_);
  }
  // Destroyed outside the lock: a request's session and admission go with them.
}

std::size_t DeferredRequests::parked() const {
  std::lock_guard lock(mutex_);
  return parked_.size();
}

}  // namespace rr::http
