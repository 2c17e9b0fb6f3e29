// Where a request's handler runs and how its answer comes back: the lanes (the worker pool with its
// bounded queue, the control threads, fibers on the connection's own I/O thread up to a cap) and
// the parking of deferred requests (Response::deferral) until their continuation acts. Knows no
// sockets: a connection hands over a request and a callable that takes its answer, so tests drive
// it with neither a listener nor a connection (request_scheduler_test).
//
// The per-request path is templated on that callable, so a request costs what it cost when this
// lived inside the connection: one post (or one fiber) there and one back, no type erasure of its
// own, no lock (the counters are atomics).
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "common/base/throttled_warning.hpp"
#include "common/fiber/fiber_context.hpp"
#include "common/http/deferred_requests.hpp"
#include "common/http/dispatch.hpp"
#include "common/http/message.hpp"
#include "common/http/server.hpp"
#include "common/http/server_answers.hpp"

namespace rr::http {

// Where place() put a request.
enum class Placement {
  control,  // Lane::control's own threads
  fiber,    // a fiber on the connection's I/O thread (one of ServerOptions::max_fibers)
  workers,  // the worker pool's queue (one of ServerOptions::max_queued_requests)
  refused,  // the queue is full: the connection answers overloaded_response() itself
};

class RequestScheduler {
 public:
  // Reads worker_threads, control_threads, max_fibers and max_queued_requests of `options`.
  RequestScheduler(const ServerOptions& options, Handler handler, Triage triage);
  RequestScheduler(const RequestScheduler&) = delete;
  RequestScheduler& operator=(const RequestScheduler&) = delete;

  // On the I/O thread: the triage's answer or lane; without a triage, or when it throws, the
  // workers.
  Dispatch triage(Request& request) {
    if (!triage_) return {};
    try {
      return triage_(request);
    } catch (...) {
      return {};
    }
  }

  // On the I/O thread: takes the place a request sent to `lane` runs in. Lane::control without
  // threads of its own, and Lane::fibers at max_fibers (or with 0), go to the workers' queue, which
  // refuses past max_queued_requests (0: no bound); a refusal is logged (throttled).
  Placement place(Lane lane) {
    if (lane == Lane::control && control_) return Placement::control;
    if (lane == Lane::fibers && take_place_below(fibers_, max_fibers_)) return Placement::fiber;
    if (try_enqueue()) return Placement::workers;
    shed_warning_.note(max_queued_requests_);
    return Placement::refused;
  }

  // Runs the handler of a request where place() put it (`refused`: answers 503). `answer(Response)` is
  // called once with its answer, on the thread that has it (a worker, a control thread, the
  // fiber's I/O thread, or whichever thread resumed a deferral): it must only post the answer to
  // where the connection writes, and must be copyable. A fiber runs on `home`, the connection's
  // I/O thread. A handler that defers is parked, holding no thread, until its continuation answers
  // or runs it again on the workers (503 when their queue is full then); once stop() has closed
  // the registry a deferral is answered 503 at once.
  template <typename Answer>
  void run(Placement placement, Request request, const boost::asio::any_io_executor& home, Answer answer) {
    switch (placement) {
      case Placement::control:
        return hand_to(*control_, std::move(request), std::move(answer), false);
      case Placement::fiber:
        return run_on_fiber(std::move(request), home, std::move(answer));
      case Placement::workers:
        return hand_to(*workers_, std::move(request), std::move(answer), true);
      case Placement::refused:
        return answer(overloaded_response());
    }
  }

  // Graceful stop: drops the parked requests (a continuation used later does nothing) and waits
  // for the running handlers, which cannot be interrupted. Their answers find the connection
  // closing. Idempotent.
  void stop();
  // After stop(): destroys the lanes' thread pools and whatever was posted to them since (a fiber's
  // blocking work), which may hold connections: the server does it before its io_contexts go.
  void destroy_lanes();

  // For a watchdog: true when the worker pool runs a probe or finishes any task within `timeout`
  // (busy workers that make progress are alive; workers all stuck are not). Blocks the caller.
  bool workers_responsive(std::chrono::milliseconds timeout);

  // What is where now, for tests and the watchdog's progress.
  std::size_t queued() const { return queued_.load(); }
  std::size_t running_fibers() const { return fibers_.load(); }
  std::size_t parked() const { return deferred_->parked(); }

 private:
  // Counts one more in `count` unless it is at `limit` already; false then.
  static bool take_place_below(std::atomic<std::size_t>& count, std::size_t limit) {
    auto current = count.load();
    do {
      if (current >= limit) return false;
    } while (!count.compare_exchange_weak(current, current + 1));
    return true;
  }

  // A place in the workers' queue, or false when it is full.
  bool try_enqueue() {
    if (max_queued_requests_ == 0) {
      ++queued_;
      return true;
    }
    return take_place_below(queued_, max_queued_requests_);
  }

  // Whatever the handler does, the client gets an answer (a 500 for an exception).
  Response call_handler(const Request& request);

  // The handler's run as a fiber on the connection's I/O thread: it suspends where it waits instead
  // of holding a thread, and neither the request nor its answer changes threads.
  template <typename Answer>
  void run_on_fiber(Request request, const boost::asio::any_io_executor& home, Answer answer) {
    fiber::spawn(home, workers_->get_executor(),
                 [this, request = std::move(request), answer = std::move(answer)]() mutable {
                   Response response = call_handler(request);
                   --fibers_;
                   if (response.deferral) return park(std::move(request), std::move(response.deferral), answer);
                   request = Request{};  // gives back what the triage took for it (Request::admission) now
                   answer(std::move(response));
                 });
  }

  // The handler's run on `lane`, from any thread: a deferred request comes back here from whoever
  // resumes it. `queued`: it holds a place in the workers' queue until it starts.
  template <typename Answer>
  void hand_to(boost::asio::thread_pool& lane, Request request, Answer answer, bool queued) {
    boost::asio::post(lane, [this, request = std::move(request), answer = std::move(answer), queued]() mutable {
      if (queued) --queued_;
      Response response = call_handler(request);
      if (queued) ++worker_tasks_done_;
      if (response.deferral) return park(std::move(request), std::move(response.deferral), answer);
      request = Request{};  // gives back what the triage took for it (Request::admission) now
      answer(std::move(response));
    });
  }

  // On the thread whose handler deferred: the request (with its admission and its wait's place,
  // still in flight for the server) waits in the registry, holding no thread, until its
  // continuation acts. Both stay with it until it is answered, on its re-runs too.
  template <typename Answer>
  void park(Request request, std::shared_ptr<const Deferral> deferral, Answer& answer) {
    request.wait_deadline = deferral->deadline;
    if (!request.admission) request.admission = deferral->admission;
    if (deferral->wait_place.has_value()) request.wait_place = deferral->wait_place;
    auto continuation =
        deferred_->park([this, request = std::move(request), answer](std::optional<Response> answered) mutable {
          if (answered) return answer(std::move(*answered));
          if (!try_enqueue()) {
            shed_warning_.note(max_queued_requests_);
            return answer(overloaded_response());
          }
          hand_to(*workers_, std::move(request), std::move(answer), true);
        });
    // Null once stopped: the connection then finds the server closing and drops the answer.
    if (!continuation) return answer(overloaded_response());
    hand_over(*deferral, continuation);
  }

  // Gives the continuation to the deferral's owner; if that throws, answers 500 through it.
  static void hand_over(const Deferral& deferral, const std::shared_ptr<Continuation>& continuation);

  const std::size_t max_fibers_;
  const std::size_t max_queued_requests_;
  Handler handler_;
  Triage triage_;
  log::ThrottledWarning shed_warning_{"request queue full: answering 503"};
  std::atomic<std::size_t> queued_{0};               // posted to the workers, not yet started
  std::atomic<std::size_t> fibers_{0};               // Lane::fibers requests running
  std::atomic<std::uint64_t> worker_tasks_done_{0};  // progress, for workers_responsive()
  // Requests whose handler deferred its answer, each holding what its answer needs (its connection).
  std::shared_ptr<DeferredRequests> deferred_ = std::make_shared<DeferredRequests>();
  // Last, so they are destroyed first: their queued work uses the members above. Optional only
  // for destroy_lanes(); the workers are there until then.
  std::optional<boost::asio::thread_pool> workers_;
  std::optional<boost::asio::thread_pool> control_;  // Lane::control, when it has threads of its own
};

}  // namespace rr::http
