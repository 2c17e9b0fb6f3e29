// Holders of I/O objects in an io_context they do not own (the HTTP client's kept connections,
// the database pool's kept socket registrations) must let go of them when that io_context shuts
// down, before its reactor and services go: a holder may well outlive the I/O threads that used it
// (a test's, or a server stopped before the pool or the payment client goes).
// ContextShutdownWatch<Holder> is the io_context's service that tells them: on shutdown it calls
// `drop(&context)` on every watched holder still alive.
#pragma once

#include <algorithm>
#include <boost/asio/execution_context.hpp>
#include <memory>
#include <mutex>
#include <vector>

namespace rr::fiber {

template <typename Holder>
class ContextShutdownWatch : public boost::asio::execution_context::service {
 public:
  using key_type = ContextShutdownWatch;
  inline static boost::asio::execution_context::id id;

  explicit ContextShutdownWatch(boost::asio::execution_context& context) : service(context) {}

  // Watched until it goes or the io_context shuts down; watching one twice is watching it once.
  void watch(const std::shared_ptr<Holder>& holder) {
    std::lock_guard lock(mutex_);
    std::erase_if(holders_, [](const auto& watched) { return watched.expired(); });
    for (const auto& watched : holders_) {
      if (watched.lock() == holder) return;
    }
    holders_.push_back(holder);
  }

 private:
  void shutdown() override {
    std::vector<std::weak_ptr<Holder>> holders;
    {
      std::lock_guard lock(mutex_);
      holders.swap(holders_);
    }
    for (const auto& watched : holders) {
      if (auto holder = watched.lock()) holder->drop(&context());
    }
  }

  std::mutex mutex_;
  std::vector<std::weak_ptr<Holder>> holders_;
};

}  // namespace rr::fiber
