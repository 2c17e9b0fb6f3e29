// A write endpoint behind the write fence: while a fence is open (WriteFenceWatch) it answers 503
// with Retry-After from memory, before any database work; otherwise it is the endpoint it wraps.
#pragma once

#include <memory>

#include "common/api/endpoint.hpp"
#include "common/api/outcome_answers.hpp"
#include "common/api/write_fence_watch.hpp"

namespace rr::api {

// A reconciliation pass over a restored window takes minutes at most.
inline constexpr int kFencedRetryAfterSeconds = 30;

class FencedEndpoint : public Endpoint {
 public:
  FencedEndpoint(std::unique_ptr<Endpoint> inner, const WriteFenceWatch& fence)
      : inner_(std::move(inner)), fence_(fence) {}

  std::optional<http::Response> answer_in_memory(const http::Request& request,
                                                 const flows::PathArguments& arguments) override {
    if (auto refusal = refusal_if_fenced()) return refusal;
    return inner_->answer_in_memory(request, arguments);
  }
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override {
    if (auto refusal = refusal_if_fenced()) return *refusal;
    return inner_->handle(request, arguments);
  }
  std::optional<std::string> idempotency_key(const http::Request& request) const override {
    return inner_->idempotency_key(request);
  }

 private:
  std::optional<http::Response> refusal_if_fenced() const {
    auto reason = fence_.closed_because();
    if (!reason) return std::nullopt;
    return error_response(503, "api_error",
                          "Writes are closed until reconciliation has run (" + *reason + "); retry later.",
                          kFencedRetryAfterSeconds);
  }

  std::unique_ptr<Endpoint> inner_;
  const WriteFenceWatch& fence_;
};

}  // namespace rr::api
