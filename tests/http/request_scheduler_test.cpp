// The request scheduler without sockets (common/http/request_scheduler.hpp): the control lane runs
// while every worker is busy, the workers' queue refuses past its bound and takes requests again
// once a place frees, fibers beyond their cap go to the workers, and a deferred request waits
// parked, holding no thread, until its continuation answers it or runs it again.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/fiber/fiber.hpp"
#include "common/http/request_scheduler.hpp"
#include "support/plain_text.hpp"
#include "support/polling.hpp"

using rr::test::plain_text;
using namespace std::chrono_literals;
using rr::http::Continuation;
using rr::http::Deferral;
using rr::http::Lane;
using rr::http::Placement;
using rr::http::Request;
using rr::http::RequestScheduler;
using rr::http::Response;
using rr::http::ServerOptions;
using rr::test::eventually;

namespace {

Request at(std::string path) {
  Request request;
  request.method = "GET";
  request.path = std::move(path);
  return request;
}

// The answers the scheduler hands back, by request name, from whichever thread has them.
class Answers {
 public:
  // The callable run() takes for the request called `name`.
  auto to(std::string name) {
    return [this, name](Response response) {
      std::lock_guard lock(mutex_);
      answers_.emplace(name, std::move(response));
      arrived_.notify_all();
    };
  }

  std::optional<Response> wait(const std::string& name, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mutex_);
    if (!arrived_.wait_for(lock, timeout, [&] { return answers_.count(name) > 0; })) return std::nullopt;
    return answers_.at(name);
  }

  bool has(const std::string& name) {
    std::lock_guard lock(mutex_);
    return answers_.count(name) > 0;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::string, Response> answers_;
};

// A gate a handler waits at until the test opens it, and that tells the test it was reached. Opens
// by itself after ten seconds, so that a failing test ends instead of joining a held worker forever.
class Gate {
 public:
  void wait_here() {
    reached_.set_value();
    opened_.wait_for(10s);
  }
  bool reached(std::chrono::milliseconds timeout = 5s) {
    return reached_future_.wait_for(timeout) == std::future_status::ready;
  }
  void open() { open_.set_value(); }

 private:
  std::promise<void> reached_;
  std::future<void> reached_future_ = reached_.get_future();
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
};

// The thread a connection's fibers would run on: an io_context, with no socket in it.
struct IoThread {
  boost::asio::io_context context{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{context.get_executor()};
  std::thread thread{[this] { context.run(); }};

  ~IoThread() {
    work.reset();
    context.stop();
    thread.join();
  }
  boost::asio::any_io_executor executor() { return context.get_executor(); }
};

ServerOptions lanes(std::size_t workers, std::size_t control, std::size_t max_fibers, std::size_t max_queued) {
  ServerOptions options;
  options.worker_threads = workers;
  options.control_threads = control;
  options.max_fibers = max_fibers;
  options.max_queued_requests = max_queued;
  return options;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(request_scheduler)

BOOST_AUTO_TEST_CASE(the_control_lane_runs_while_every_worker_is_busy) {
  IoThread io;
  Answers answers;
  Gate slow;
  RequestScheduler scheduler(
      lanes(1, 1, 0, 0),
      [&](const Request& request) {
        if (request.path == "/slow") slow.wait_here();
        return plain_text("ran " + request.path);
      },
      nullptr);

  BOOST_TEST((scheduler.place(Lane::workers) == Placement::workers));
  scheduler.run(Placement::workers, at("/slow"), io.executor(), answers.to("slow"));
  BOOST_REQUIRE(slow.reached());

  BOOST_TEST((scheduler.place(Lane::control) == Placement::control));
  scheduler.run(Placement::control, at("/ready"), io.executor(), answers.to("ready"));
  auto ready = answers.wait("ready");
  BOOST_REQUIRE(ready.has_value());
  BOOST_TEST(ready->body == "ran /ready");
  BOOST_TEST(!answers.has("slow"));  // the only worker is still held

  slow.open();
  auto done = answers.wait("slow");
  BOOST_REQUIRE(done.has_value());
  BOOST_TEST(done->body == "ran /slow");
  scheduler.stop();
}

BOOST_AUTO_TEST_CASE(without_control_threads_the_control_lane_queues_for_the_workers) {
  RequestScheduler scheduler(
      lanes(1, 0, 0, 1), [](const Request&) { return plain_text("ran"); }, nullptr);
  BOOST_TEST((scheduler.place(Lane::control) == Placement::workers));
  BOOST_TEST(scheduler.queued() == 1u);
  // The queue's one place is taken, so the next control request is refused like any other.
  BOOST_TEST((scheduler.place(Lane::control) == Placement::refused));
}

BOOST_AUTO_TEST_CASE(past_the_queue_bound_a_request_is_refused_until_a_place_frees) {
  IoThread io;
  Answers answers;
  Gate slow;
  RequestScheduler scheduler(
      lanes(1, 0, 0, 2),
      [&](const Request& request) {
        if (request.path == "/slow") slow.wait_here();
        return plain_text("ran " + request.path);
      },
      nullptr);

  BOOST_REQUIRE((scheduler.place(Lane::workers) == Placement::workers));
  scheduler.run(Placement::workers, at("/slow"), io.executor(), answers.to("slow"));
  BOOST_REQUIRE(slow.reached());
  BOOST_TEST(scheduler.queued() == 0u);  // running, no longer waiting

  for (const char* name : {"first", "second"}) {
    BOOST_TEST((scheduler.place(Lane::workers) == Placement::workers), name);
    scheduler.run(Placement::workers, at(std::string("/") + name), io.executor(), answers.to(name));
  }
  BOOST_TEST(scheduler.queued() == 2u);
  auto third = scheduler.place(Lane::workers);
  BOOST_TEST((third == Placement::refused));
  BOOST_TEST(scheduler.queued() == 2u);  // a refusal takes no place
  // A refused request run anyway is answered 503 with Retry-After, never reaching the handler.
  scheduler.run(third, at("/third"), io.executor(), answers.to("third"));
  auto refused = answers.wait("third");
  BOOST_REQUIRE(refused.has_value());
  BOOST_TEST(refused->status == 503);
  BOOST_TEST(refused->header("Retry-After").value_or("") == "1");

  slow.open();
  for (const char* name : {"slow", "first", "second"}) {
    auto answer = answers.wait(name);
    BOOST_REQUIRE_MESSAGE(answer.has_value(), name);
    BOOST_TEST(answer->status == 200, name);
  }
  BOOST_TEST(scheduler.queued() == 0u);
  BOOST_TEST((scheduler.place(Lane::workers) == Placement::workers));
  scheduler.run(Placement::workers, at("/after"), io.executor(), answers.to("after"));
  BOOST_TEST(answers.wait("after").has_value());
  scheduler.stop();
}

BOOST_AUTO_TEST_CASE(fibers_beyond_the_cap_run_on_the_workers) {
  IoThread io;
  Answers answers;
  std::atomic<bool> release{false};
  std::promise<void> fiber_started;
  std::map<std::string, bool> on_fiber;
  std::mutex on_fiber_mutex;
  RequestScheduler scheduler(
      lanes(1, 0, 1, 0),
      [&](const Request& request) {
        {
          std::lock_guard lock(on_fiber_mutex);
          on_fiber[request.path] = rr::fiber::active();
        }
        if (request.path == "/waits") {
          fiber_started.set_value();
          // Suspends the fiber: the I/O thread is free meanwhile, the fiber's place is not.
          for (int i = 0; !release && i < 5000; ++i) rr::fiber::sleep_for(2ms);  // ten seconds at most
        }
        return plain_text("ran " + request.path);
      },
      nullptr);

  BOOST_REQUIRE((scheduler.place(Lane::fibers) == Placement::fiber));
  scheduler.run(Placement::fiber, at("/waits"), io.executor(), answers.to("waits"));
  BOOST_REQUIRE(fiber_started.get_future().wait_for(5s) == std::future_status::ready);
  BOOST_TEST(scheduler.running_fibers() == 1u);

  // The one fiber place is taken: the next fiber request queues for the workers instead.
  auto second = scheduler.place(Lane::fibers);
  BOOST_TEST((second == Placement::workers));
  scheduler.run(second, at("/second"), io.executor(), answers.to("second"));
  BOOST_TEST(answers.wait("second").has_value());
  BOOST_TEST(!answers.has("waits"));

  release = true;
  BOOST_TEST(answers.wait("waits").has_value());
  BOOST_TEST(scheduler.running_fibers() == 0u);
  {
    std::lock_guard lock(on_fiber_mutex);
    BOOST_TEST(on_fiber["/waits"]);
    BOOST_TEST(!on_fiber["/second"]);
  }
  // The place is free again.
  BOOST_TEST((scheduler.place(Lane::fibers) == Placement::fiber));
  scheduler.run(Placement::fiber, at("/third"), io.executor(), answers.to("third"));
  BOOST_TEST(answers.wait("third").has_value());
  scheduler.stop();
}

BOOST_AUTO_TEST_CASE(with_no_fibers_allowed_the_fiber_lane_is_the_workers) {
  RequestScheduler scheduler(
      lanes(1, 0, 0, 0), [](const Request&) { return plain_text("ran"); }, nullptr);
  BOOST_TEST((scheduler.place(Lane::fibers) == Placement::workers));
  BOOST_TEST(scheduler.running_fibers() == 0u);
}

// A handler that defers the first run of each request and answers the second; the admission it
// defers with is what the re-run sees.
struct Deferring {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Continuation>> parked;
  std::map<std::string, const void*> rerun_admission;
  std::shared_ptr<const void> admission = std::make_shared<int>(7);
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::now() + 60s;
  std::map<std::string, bool> rerun_saw_deadline;

  Response operator()(const Request& request) {
    std::lock_guard lock(mutex);
    if (!request.wait_deadline) {
      auto deferral = std::make_shared<Deferral>();
      deferral->deadline = deadline;
      deferral->admission = admission;
      deferral->park = [this, path = request.path](std::shared_ptr<Continuation> continuation) {
        std::lock_guard park_lock(mutex);
        parked[path] = std::move(continuation);
      };
      Response response;
      response.deferral = std::move(deferral);
      return response;
    }
    rerun_admission[request.path] = request.admission.get();
    rerun_saw_deadline[request.path] = *request.wait_deadline == deadline;
    return plain_text("again " + request.path);
  }

  std::shared_ptr<Continuation> take(const std::string& path) {
    std::lock_guard lock(mutex);
    auto it = parked.find(path);
    if (it == parked.end()) return nullptr;
    auto continuation = std::move(it->second);
    parked.erase(it);
    return continuation;
  }
};

BOOST_AUTO_TEST_CASE(a_deferred_request_waits_parked_until_answered_or_run_again) {
  IoThread io;
  Answers answers;
  Deferring handler;
  Gate slow;
  RequestScheduler scheduler(
      lanes(1, 0, 0, 1),
      [&](const Request& request) {
        if (request.path == "/slow") {
          slow.wait_here();
          return plain_text("slow");
        }
        return handler(request);
      },
      nullptr);

  // One after another: the queue has one place, which each takes until the worker starts it.
  std::size_t parked = 0;
  for (const char* name : {"answered", "rerun", "shed"}) {
    BOOST_REQUIRE((scheduler.place(Lane::workers) == Placement::workers));
    scheduler.run(Placement::workers, at(std::string("/") + name), io.executor(), answers.to(name));
    ++parked;
    BOOST_REQUIRE(eventually([&] { return scheduler.parked() == parked; }));
  }
  BOOST_TEST(scheduler.queued() == 0u);  // parked requests hold no place in the queue
  BOOST_TEST(!answers.has("answered"));

  // Answered by its continuation: that answer, as it is.
  handler.take("/answered")->answer(plain_text("from the waiter"));
  auto answered = answers.wait("answered");
  BOOST_REQUIRE(answered.has_value());
  BOOST_TEST(answered->body == "from the waiter");

  // Run again: on the workers, with the first deferral's deadline and its admission.
  handler.take("/rerun")->run_again();
  auto rerun = answers.wait("rerun");
  BOOST_REQUIRE(rerun.has_value());
  BOOST_TEST(rerun->body == "again /rerun");
  {
    std::lock_guard lock(handler.mutex);
    BOOST_TEST(handler.rerun_admission["/rerun"] == handler.admission.get());
    BOOST_TEST(handler.rerun_saw_deadline["/rerun"]);
  }

  // Run again while the workers' queue is full: 503 at once, the handler not called.
  BOOST_REQUIRE((scheduler.place(Lane::workers) == Placement::workers));
  scheduler.run(Placement::workers, at("/slow"), io.executor(), answers.to("slow"));
  BOOST_REQUIRE(slow.reached());
  BOOST_REQUIRE((scheduler.place(Lane::workers) == Placement::workers));  // the queue's one place
  scheduler.run(Placement::workers, at("/queued"), io.executor(), answers.to("queued"));
  handler.take("/shed")->run_again();
  auto shed = answers.wait("shed");
  BOOST_REQUIRE(shed.has_value());
  BOOST_TEST(shed->status == 503);
  BOOST_TEST(scheduler.parked() == 0u);

  slow.open();
  BOOST_TEST(answers.wait("slow").has_value());
  // /queued defers in turn; stopping drops it, and its continuation then does nothing.
  BOOST_TEST(eventually([&] { return scheduler.parked() == 1; }));
  scheduler.stop();
  BOOST_TEST(scheduler.parked() == 0u);
  auto late = handler.take("/queued");
  BOOST_REQUIRE(late != nullptr);
  late->answer(plain_text("too late"));
  BOOST_TEST(!answers.wait("queued", 200ms).has_value());
}

BOOST_AUTO_TEST_CASE(once_stopped_a_deferral_is_answered_503_at_once) {
  IoThread io;
  Answers answers;
  Deferring handler;
  RequestScheduler scheduler(
      lanes(1, 0, 1, 0), [&](const Request& request) { return handler(request); }, nullptr);
  scheduler.stop();
  // A fiber still runs on its I/O thread after the lanes stopped; its deferral finds no registry.
  BOOST_REQUIRE((scheduler.place(Lane::fibers) == Placement::fiber));
  scheduler.run(Placement::fiber, at("/late"), io.executor(), answers.to("late"));
  auto late = answers.wait("late");
  BOOST_REQUIRE(late.has_value());
  BOOST_TEST(late->status == 503);
}

BOOST_AUTO_TEST_CASE(a_failing_handler_answers_500_and_a_failing_triage_means_the_workers) {
  IoThread io;
  Answers answers;
  RequestScheduler scheduler(
      lanes(1, 0, 0, 0), [](const Request&) -> Response { throw std::runtime_error("boom"); },
      [](Request&) -> rr::http::Dispatch { throw std::runtime_error("triage boom"); });
  Request request = at("/x");
  auto dispatch = scheduler.triage(request);
  BOOST_TEST(!dispatch.answer.has_value());
  BOOST_TEST((dispatch.lane == Lane::workers));
  BOOST_REQUIRE((scheduler.place(dispatch.lane) == Placement::workers));
  scheduler.run(Placement::workers, std::move(request), io.executor(), answers.to("x"));
  auto answer = answers.wait("x");
  BOOST_REQUIRE(answer.has_value());
  BOOST_TEST(answer->status == 500);
  scheduler.stop();
}

BOOST_AUTO_TEST_SUITE_END()
