// Deferred answers of the HTTP server (Response::deferral): a parked request holds no worker,
// comes back with its wait deadline, is answered or shed like any other, keeps the server in
// flight, and is dropped safely when the server stops with it still parked.
#include <boost/test/unit_test.hpp>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/http/client.hpp"
#include "common/http/deferred_requests.hpp"
#include "common/http/server.hpp"

using namespace std::chrono_literals;
using rr::http::Continuation;
using rr::http::Deferral;
using rr::http::Request;
using rr::http::Response;

namespace {

// Continuations the handler parked, for the test to act on.
struct Parked {
  std::mutex mutex;
  std::vector<std::shared_ptr<Continuation>> continuations;

  void add(std::shared_ptr<Continuation> continuation) {
    std::lock_guard lock(mutex);
    continuations.push_back(std::move(continuation));
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return continuations.size();
  }
  std::shared_ptr<Continuation> take() {
    std::lock_guard lock(mutex);
    auto out = continuations.front();
    continuations.erase(continuations.begin());
    return out;
  }
  // Waits until `n` are parked (the handler ran), 5 s at most.
  bool wait_for(std::size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (size() >= n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

// A handler that defers every first run and, on a re-run (wait_deadline set), says so.
rr::http::Handler deferring_handler(Parked& parked) {
  return [&parked](const Request& request) {
    if (request.wait_deadline) {
      Response response;
      response.content_type = "text/plain";
      response.body = "re-run";
      return response;
    }
    Response later;
    later.deferral = std::make_shared<const Deferral>(
        Deferral{std::chrono::steady_clock::now() + 5s,
                 [&parked](std::shared_ptr<Continuation> c) { parked.add(std::move(c)); }});
    return later;
  };
}

std::future<rr::http::ClientResponse> get_async(const rr::http::Server& server, const std::string& path) {
  return std::async(std::launch::async, [url = "http://127.0.0.1:" + std::to_string(server.port()) + path] {
    rr::http::ClientRequest request;
    request.url = url;
    request.timeout = 10000ms;
    return rr::http::send(request);
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(parked_requests_hold_no_worker_and_come_back_with_their_deadline) {
  Parked parked;
  rr::http::ServerOptions options;
  options.worker_threads = 1;  // one worker, three parked requests: they cannot be holding it
  rr::http::Server server(options, deferring_handler(parked));
  server.start();
  auto first = get_async(server, "/a");
  auto second = get_async(server, "/b");
  auto third = get_async(server, "/c");
  BOOST_REQUIRE(parked.wait_for(3));
  BOOST_TEST(server.in_flight() == 3u);  // a graceful stop waits for them
  BOOST_TEST(!server.wait_idle(50ms));

  parked.take()->run_again();
  Response direct;
  direct.status = 202;
  direct.content_type = "text/plain";
  direct.body = "answered directly";
  auto answered = parked.take();
  answered->answer(direct);
  answered->run_again();  // a second action does nothing

  std::vector<rr::http::ClientResponse> responses;
  for (auto* future : {&first, &second, &third}) {
    if (future->wait_for(200ms) == std::future_status::ready) responses.push_back(future->get());
  }
  BOOST_REQUIRE(responses.size() == 2u);
  int reruns = 0, direct_answers = 0;
  for (const auto& response : responses) {
    if (response.status == 200 && response.body == "re-run") ++reruns;
    if (response.status == 202 && response.body == "answered directly") ++direct_answers;
  }
  BOOST_TEST(reruns == 1);
  BOOST_TEST(direct_answers == 1);

  // A continuation dropped without acting answers 503 rather than leave its client waiting.
  parked.take().reset();
  auto last = first.valid() ? std::move(first) : second.valid() ? std::move(second) : std::move(third);
  auto dropped = last.get();
  BOOST_TEST(dropped.status == 503);
  BOOST_TEST(!dropped.header("Retry-After").empty());
  BOOST_TEST(server.wait_idle(2000ms));
  server.stop();
}

BOOST_AUTO_TEST_CASE(stopping_with_parked_requests_drops_them_and_later_continuations_do_nothing) {
  Parked parked;
  std::shared_ptr<Continuation> kept;
  {
    rr::http::ServerOptions options;
    options.worker_threads = 2;
    rr::http::Server server(options, deferring_handler(parked));
    server.start();
    auto first = get_async(server, "/a");
    auto second = get_async(server, "/b");
    BOOST_REQUIRE(parked.wait_for(2));
    kept = parked.take();
    server.stop();
    // The clients see their connections closed without an answer.
    BOOST_CHECK_THROW(first.get(), rr::http::TransportError);
    BOOST_CHECK_THROW(second.get(), rr::http::TransportError);
    parked.take()->run_again();  // the server is stopped but not destroyed: nothing happens
  }
  // The server is gone: acting (and dropping) must touch nothing of it (AddressSanitizer checks).
  kept->run_again();
  kept->answer(Response{});
  kept.reset();
}

BOOST_AUTO_TEST_CASE(a_run_again_finds_a_full_queue_and_is_answered_503) {
  Parked parked;
  std::promise<void> release_worker;
  auto released = release_worker.get_future().share();
  rr::http::ServerOptions options;
  options.worker_threads = 1;
  options.max_queued_requests = 1;
  rr::http::Server server(options, [&parked, released](const Request& request) {
    if (request.path == "/block") {
      released.wait();
      return Response{200, "text/plain", {}, "unblocked"};
    }
    return deferring_handler(parked)(request);
  });
  server.start();
  auto deferred = get_async(server, "/a");
  BOOST_REQUIRE(parked.wait_for(1));
  auto blocker = get_async(server, "/block");
  std::this_thread::sleep_for(200ms);     // the worker is taken by /block
  auto queued = get_async(server, "/b");  // fills the queue's one place
  std::this_thread::sleep_for(200ms);
  parked.take()->run_again();
  auto shed = deferred.get();
  BOOST_TEST(shed.status == 503);
  BOOST_TEST(shed.header("Retry-After") == "1");
  release_worker.set_value();
  BOOST_TEST(blocker.get().body == "unblocked");
  // /b was deferred in turn; let it go.
  BOOST_REQUIRE(parked.wait_for(1));
  parked.take()->run_again();
  BOOST_TEST(queued.get().body == "re-run");
  server.stop();
}
