// The scheduler's parts off the inlined per-request path: a handler's failure, a deferral's
// hand-over, stopping, and the workers' liveness probe.
#include "common/http/request_scheduler.hpp"

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <exception>
#include <thread>

#include "common/base/log.hpp"

namespace rr::http {

RequestScheduler::RequestScheduler(const ServerOptions& options, Handler handler, Triage triage)
    : max_fibers_(options.max_fibers),
      max_queued_requests_(options.max_queued_requests),
      handler_(std::move(handler)),
      triage_(std::move(triage)) {
  workers_.emplace(std::max<std::size_t>(options.worker_threads, 1));
  if (options.control_threads > 0) control_.emplace(options.control_threads);
}

Response RequestScheduler::call_handler(const Request& request) {
  try {
    return handler_(request);
  } catch (const boost::context::detail::forced_unwind&) {
    throw;  // a fiber destroyed while suspended (the server stopped): its stack must unwind
  } catch (const std::exception& e) {
    log::error("request handler failed", {{"method", request.method}, {"path", request.path}, {"error", e.what()}});
  } catch (...) {
    log::error("request handler failed", {{"method", request.method}, {"path", request.path}, {"error", "unknown"}});
  }
  return error_response(500, "api_error", "An internal error occurred.");
}

void RequestScheduler::hand_over(const Deferral& deferral, const std::shared_ptr<Continuation>& continuation) {
  try {
    deferral.park(continuation);
  } catch (const std::exception& e) {
    log::error("parking a deferred request failed", {{"error", e.what()}});
    continuation->answer(error_response(500, "api_error", "An internal error occurred."));
  }
}

void RequestScheduler::stop() {
  deferred_->close();
  if (workers_) workers_->join();
  if (control_) control_->join();
}

void RequestScheduler::destroy_lanes() {
  workers_.reset();
  control_.reset();
}

bool RequestScheduler::workers_responsive(std::chrono::milliseconds timeout) {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  auto done_before = worker_tasks_done_.load();
  boost::asio::post(*workers_, [ran] { ran->store(true); });
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (ran->load() || worker_tasks_done_.load() != done_before) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace rr::http
