// The requests a server keeps while their handlers wait for something (Response::deferral): each
// parked with what resumes it, handed out as a call-once Continuation. Server::stop closes the
// registry, dropping what is parked, so a continuation used later (by a registry of waiters that
// outlives the server) touches nothing of the server. Knows no sockets: the server's resume
// function does the I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "common/http/message.hpp"

namespace rr::http {

class DeferredRequests : public std::enable_shared_from_this<DeferredRequests> {
 public:
  // What ends a parked request: with an answer, write it; without, run the request again. Called
  // at most once, under the registry's lock (so close() waits for it): it must only post work.
  using Resume = std::function<void(std::optional<Response> answer)>;

  // Keeps `resume` until the returned continuation acts or close() drops it; null once closed
  // (the caller then drops the request itself).
  std::shared_ptr<Continuation> park(Resume resume);
  // Drops every parked request and refuses new ones; continuations act no more. Idempotent.
  void close();
  std::size_t parked() const;

 private:
  class Ticket;
  void resume(std::uint64_t id, std::optional<Response> answer);

  mutable std::mutex mutex_;
  bool closed_ = false;
  std::uint64_t next_id_ = 0;
  std::unordered_map<std::uint64_t, Resume> parked_;
};

}  // namespace rr::http
