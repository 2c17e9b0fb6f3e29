// The HTTP/1.1 server: an acceptor and one session per connection on the I/O threads, handlers
// on a worker pool or as fibers on the I/O threads. With the client's and beast_response.cpp, the
// translation units that include Beast (common/fiber/ includes Asio for the fibers).
#include "common/http/server.hpp"

#include "common/base/error_body.hpp"
#include "common/http/beast_response.hpp"
#include "common/http/connection_limit.hpp"
#include "common/http/deferred_requests.hpp"
#include "common/http/idle_sweep.hpp"
#include "common/http/io_thread_balance.hpp"
#include "common/http/parse_buffered.hpp"
#include "common/http/request_framing.hpp"
#include "common/http/request_parser.hpp"
#include "common/http/response_wire.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/context/fiber.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/base/log.hpp"
#include "common/base/throttled_warning.hpp"
#include "common/fiber/fiber_context.hpp"

namespace rr::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

// After an error response that closes the connection, unread request bytes would make the kernel
// send RST and the client could lose the response; drain up to this much for this long first.
constexpr std::size_t kLingerBytes = 1024 * 1024;
constexpr std::chrono::milliseconds kLingerTime{2000};
// How long stop() lets sessions run their close handlers before stopping the I/O threads.
constexpr std::chrono::milliseconds kStopGrace{2000};
// How often the I/O threads' CPU is read to decide how many of them are in use (IoThreadBalance):
// every 100 ms while they work, every second while one thread in use is all but idle, so that an
// idle server wakes once a second for it, not ten times (a load from idle spreads within a second).
constexpr std::chrono::milliseconds kBalancePeriod{100};
constexpr std::chrono::milliseconds kQuietBalancePeriod{1000};
constexpr double kQuietBelow = 0.02;  // of one core, for every thread
// A connection keeps its answer buffer for the next answer up to this size (the usual answer is
// well under 1 KiB); a larger one, such as a long list, is given back once written.
constexpr std::size_t kKeptWireCapacity = 16 * 1024;
// The first read of a request: one whole usual request, more of a pipeline or a large body read on.
constexpr std::size_t kFirstReadBytes = 4096;

Response json_error(int status, std::string_view type, std::string_view message) {
  Response response;
  response.status = status;
  response.body = error_body(type, message);
  return response;
}

// What a full worker queue answers: the client should come back shortly, not wait here.
Response overloaded() {
  Response response = json_error(503, "api_error", "The server is busy; retry shortly.");
  response.with_header("Retry-After", "1");
  return response;
}

// Adapts the plain in-memory hook to a triage: answered, or on to the workers.
Triage triage_from(InMemoryHandler in_memory) {
  if (!in_memory) return nullptr;
  return [in_memory = std::move(in_memory)](Request& request) { return Dispatch{in_memory(request), Lane::workers}; };
}

bool is_drop_marker(const Response& response) { return response.header(kDropConnectionHeader).has_value(); }

std::string peer_address(const tcp::socket& socket) {
  error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "";
  auto address = endpoint.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).to_string();
  }
  return address.to_string();
}

// The storage a kept Request holds.
std::size_t kept_bytes(const Request& request) {
  std::size_t bytes =
      request.body.capacity() + request.target.capacity() + request.path.capacity() + request.query.capacity();
  for (const auto& [name, value] : request.headers) bytes += name.capacity() + value.capacity();
  return bytes;
}

class Session;

// Everything the sessions share. Member order matters for destruction: the session registry
// and the in-flight count outlive the io_context, whose destruction may destroy the last
// sessions; the worker pool dies first because its queued work holds sessions.
struct ServerCore {
  ServerOptions options;
  Handler handler;
  Triage triage;
  ConnectionLimit connections;
  log::ThrottledWarning shed_warning{"request queue full: answering 503"};

  mutable std::mutex mutex;
  std::condition_variable changed;  // in_flight reached 0 or a session ended
  // Counted without the mutex, which only a drop to zero takes (to wake wait_idle()).
  std::atomic<std::size_t> in_flight{0};
  std::unordered_map<ConnectionLimit::Id, std::weak_ptr<Session>> sessions;

  std::atomic<bool> accepting{true};
  std::atomic<bool> keep_alive_allowed{true};  // false from close_connections_after_each_answer()
  std::atomic<bool> closing{false};
  std::atomic<bool> stopped{false};
  std::uint16_t bound_port = 0;
  std::atomic<std::size_t> queued{0};               // posted to the workers, not yet started
  std::atomic<std::size_t> fibers{0};               // Lane::fibers requests running
  std::atomic<std::uint64_t> worker_tasks_done{0};  // progress, for workers_responsive()
  // Requests whose handler deferred its answer (Response::deferral), each holding its session.
  std::shared_ptr<DeferredRequests> deferred = std::make_shared<DeferredRequests>();

  // One io_context per I/O thread: a connection's work runs on one thread at a time, so no
  // thread is woken for another's socket. Which thread, and how many are in use, the balance
  // decides; a connection changes threads only between requests (Session::move_to).
  std::vector<std::unique_ptr<asio::io_context>> iocs;
  std::vector<std::unique_ptr<IdleSweep>> idle_sweeps;  // one per io_context, the same index
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  IoThreadBalance balance;
  tcp::acceptor acceptor;
  tcp protocol = tcp::v4();  // the listener's, which every accepted socket shares
  asio::steady_timer accept_retry;
  std::vector<std::thread> io_threads;
  // The balance's clock: on the first I/O thread, reading every I/O thread's CPU time.
  asio::steady_timer balance_timer;
  std::vector<clockid_t> io_thread_clocks;
  std::vector<double> io_thread_cpu_seconds;
  std::chrono::steady_clock::time_point balance_sampled;
  asio::thread_pool workers;
  std::optional<asio::thread_pool> control;  // Lane::control, when it has threads of its own

  ServerCore(ServerOptions opts, Handler h, Triage t)
      : options(std::move(opts)),
        handler(std::move(h)),
        triage(std::move(t)),
        connections(options.max_connections),
        iocs(make_io_contexts(options.io_threads)),
        idle_sweeps(make_idle_sweeps(iocs, idle_sweep_period(options.read_timeout, options.idle_timeout))),
        balance(iocs.size()),
        acceptor(asio::make_strand(*iocs.front())),
        accept_retry(acceptor.get_executor()),
        balance_timer(*iocs.front()),
        workers(std::max<std::size_t>(options.worker_threads, 1)) {
    if (options.control_threads > 0) control.emplace(options.control_threads);
  }

  static std::vector<std::unique_ptr<asio::io_context>> make_io_contexts(std::size_t threads) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i)
      out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }

  static std::vector<std::unique_ptr<IdleSweep>> make_idle_sweeps(
      const std::vector<std::unique_ptr<asio::io_context>>& contexts, std::chrono::milliseconds period) {
    std::vector<std::unique_ptr<IdleSweep>> out;
    for (const auto& context : contexts) out.push_back(std::make_unique<IdleSweep>(*context, period));
    return out;
  }

  void begin_request() { in_flight.fetch_add(1); }

  void end_request() {
    if (in_flight.fetch_sub(1) != 1) return;
    // Under the mutex, so a waiter that has just seen in_flight above zero is asleep already.
    std::lock_guard lock(mutex);
    changed.notify_all();
  }

  // Runs on a worker thread or a fiber: whatever the handler does, the client gets an answer.
  Response call_handler(const Request& request) {
    try {
      return handler(request);
    } catch (const boost::context::detail::forced_unwind&) {
      throw;  // a fiber destroyed while suspended (the server stopped): its stack must unwind
    } catch (const std::exception& e) {
      log::error("request handler failed", {{"method", request.method}, {"path", request.path}, {"error", e.what()}});
    } catch (...) {
      log::error("request handler failed", {{"method", request.method}, {"path", request.path}, {"error", "unknown"}});
    }
    return json_error(500, "api_error", "An internal error occurred.");
  }

  // On the I/O thread; any failure just sends the request on to the workers.
  Dispatch dispatch(Request& request) {
    if (!triage) return {};
    try {
      return triage(request);
    } catch (...) {
      return {};
    }
  }

  // Counts one more in `count` unless it is at `limit` already; false then.
  static bool take_place_below(std::atomic<std::size_t>& count, std::size_t limit) {
    auto current = count.load();
    do {
      if (current >= limit) return false;
    } while (!count.compare_exchange_weak(current, current + 1));
    return true;
  }

  // A place among the running fibers, or false at max_fibers (0: no fibers).
  bool try_start_fiber() { return take_place_below(fibers, options.max_fibers); }

  // A place in the workers' queue, or false when it is full (max_queued_requests 0: no bound).
  bool try_enqueue() {
    if (options.max_queued_requests == 0) {
      ++queued;
      return true;
    }
    return take_place_below(queued, options.max_queued_requests);
  }

  std::vector<std::shared_ptr<Session>> live_sessions() {
    std::vector<std::shared_ptr<Session>> out;
    std::lock_guard lock(mutex);
    for (auto& [id, weak] : sessions) {
      if (auto session = weak.lock()) out.push_back(std::move(session));
    }
    return out;
  }

  void do_accept();
  void make_room(ConnectionLimit::Id id);
  void start_balancing();
  void sample_io_threads();
  void close_idle_sessions();
  void close_all_sessions();
};

class Session : public std::enable_shared_from_this<Session>, private IdleWaiter {
 public:
  Session(tcp::socket socket, ServerCore& core, ConnectionLimit::Id id, std::size_t thread)
      : remote_address_(peer_address(socket)),
        stream_(std::move(socket)),
        executor_(stream_.get_executor()),
        core_(core),
        id_(id),
        thread_(thread) {}

  // The same connection on another I/O thread (move_to): what it had read ahead and its count of
  // requests come along.
  Session(tcp::socket socket, Session& predecessor, std::size_t thread)
      : remote_address_(predecessor.remote_address_),
        stream_(std::move(socket)),
        executor_(stream_.get_executor()),
        core_(predecessor.core_),
        id_(predecessor.id_),
        thread_(thread),
        buffer_(std::move(predecessor.buffer_)),
        served_(predecessor.served_) {}

  ~Session() {
    // Only when the io_context was torn down with our handlers still queued.
    if (counted_) core_.end_request();
    leave_thread();
    if (moved_) return;  // the connection lives on in the successor, registered under our id
    core_.connections.closed(id_);
    std::lock_guard lock(core_.mutex);
    if (auto it = core_.sessions.find(id_); it != core_.sessions.end() && it->second.lock() == nullptr) {
      core_.sessions.erase(it);
    }
    core_.changed.notify_all();
  }

  void start() {
    {
      std::lock_guard lock(core_.mutex);
      core_.sessions[id_] = weak_from_this();
    }
    // send() tries a synchronous write first, which must return rather than wait when the
    // socket's buffer is full. Asio's own asynchronous operations work either way.
    error_code ignored;
    stream_.socket().non_blocking(true, ignored);
    asio::dispatch(executor_, [self = shared_from_this()] { self->read_next(); });
  }

  // Graceful stop: a connection waiting for its next request has nothing to finish.
  void close_if_idle() {
    asio::post(executor_, [self = shared_from_this()] {
      if (auto next = self->successor_.lock()) return next->close_if_idle();
      if (self->idle_) self->close();
    });
  }

  void close_now() {
    asio::post(executor_, [self = shared_from_this()] {
      if (auto next = self->successor_.lock()) return next->close_now();
      self->close();
    });
  }

  // The connection cap needs our place: go now unless a request is in progress, whose answer is
  // then the last one on this connection.
  void make_room() {
    asio::post(executor_, [self = shared_from_this()] {
      if (auto next = self->successor_.lock()) return next->make_room();
      if (self->counted_) {
        self->evicted_ = true;
      } else {
        self->close();
      }
    });
  }

 private:
  void read_next() {
    if (closed_) return;
    if (core_.closing || (!core_.accepting && buffer_.size() == 0)) return close();
    // What an earlier request left is kept for its storage up to the size an answer's buffer
    // keeps: a connection that sent one large request and then idles does not hold it.
    if (kept_bytes(request_) > kKeptWireCapacity) request_ = Request{};
    parser_.emplace(request_);
    parser_->header_limit(static_cast<std::uint32_t>(core_.options.header_limit));
    parser_->body_limit(core_.options.body_limit);
    if (buffer_.size() > 0) {
      // A pipelined request is already here. Parsed on a later turn of the loop, not in this call:
      // an answer written at once calls read_next() again, and a long pipeline must not recurse.
      read_deadline_ = std::chrono::steady_clock::now() + core_.options.read_timeout;
      return asio::post(executor_, [self = shared_from_this()] { self->read_request(); });
    }
    // Waiting for the first byte is keep-alive idling, timed separately from reading a request;
    // for a fresh connection the request's own read timeout starts at accept. The wait's deadline
    // is the I/O thread's sweep's to keep (IdleSweep), not a timer of its own.
    idle_ = true;
    auto now = std::chrono::steady_clock::now();
    read_deadline_ = now + core_.options.read_timeout;
    sweep().add(*this, served_ == 0 ? read_deadline_ : now + core_.options.idle_timeout);
    wait_for_first_bytes();
  }

  // On the socket itself, with the one buffer: Asio then reads with recv(2), where through Beast's
  // stream (a buffer sequence of its own) it used recvmsg(2), whose message header and vector the
  // kernel copies in; and a read op, unlike a readiness wait, costs no epoll_ctl(2) to arm.
  void wait_for_first_bytes() {
    stream_.socket().async_read_some(
        buffer_.prepare(kFirstReadBytes),
        [self = shared_from_this()](error_code ec, std::size_t n) { self->on_first_bytes(ec, n); });
  }

  IdleSweep& sweep() { return *core_.idle_sweeps[thread_]; }

  void idle_deadline_passed() override {
    if (idle_) close();
  }

  void on_first_bytes(error_code ec, std::size_t n) {
    idle_ = false;
    sweep().remove(*this);
    if (ec) return close();
    buffer_.commit(n);
    if (served_ > 0) read_deadline_ = std::chrono::steady_clock::now() + core_.options.read_timeout;
    read_request();
  }

  // Headers first: a body over the limit is refused from its Content-Length alone, and a client
  // that sent "Expect: 100-continue" (curl does for large bodies) is told to go on. A request
  // usually arrives whole in one read: it is then parsed here, from the buffer, without an
  // asynchronous read that would only complete at once (a scheduler round and a timer each).
  void read_request() {
    error_code ec;
    if (parse_buffered(buffer_, *parser_, false, ec)) return on_head(ec);
    stream_.expires_at(read_deadline_);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](error_code ec, std::size_t) { self->on_head(ec); });
  }

  void on_head(error_code ec) {
    if (!ec) {
      // Before the body is read, and before a bodiless request is handed on: its "body" may be
      // a smuggled request.
      if (auto rejection =
              check_request_head(RequestHead{parser_->version(), request_.headers, parser_->folded_field()})) {
        return write_error(rejection->status, rejection->message, rejection->headers);
      }
    }
    if (ec || parser_->is_done()) return on_read(ec);
    auto expect = request_.header("Expect");
    if (expect && iequals(*expect, "100-continue")) return send_continue();
    read_body();
  }

  void send_continue() {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](error_code ec, std::size_t) {
                        if (ec) return self->close();
                        self->read_body();
                      });
  }

  void read_body() {
    error_code ec;
    if (parse_buffered(buffer_, *parser_, true, ec)) return on_read(ec);
    stream_.expires_at(read_deadline_);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(error_code ec) {
    if (closed_) return;
    if (ec) {
      if (ec == bhttp::error::body_limit) {
        return write_error(413, "Request body is larger than " + std::to_string(core_.options.body_limit) + " bytes.");
      }
      if (ec == bhttp::error::header_limit) {
        return write_error(431,
                           "Request headers are larger than " + std::to_string(core_.options.header_limit) + " bytes.");
      }
      // A request cut short (timeout, reset, EOF midway) leaves nobody to answer.
      if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
          ec.category() != bhttp::make_error_code(bhttp::error::bad_method).category()) {
        return close();
      }
      return write_error(400, "Malformed HTTP request.");
    }
    if (core_.closing) return close();

    ++served_;
    bool keep_alive = parser_->keep_alive() && served_ < core_.options.max_requests_per_connection;
    // HEAD is GET without the body (RFC 9110 section 9.3.2): handlers see GET (RequestParser), so
    // every GET route answers HEAD with the same status and headers, and to_beast leaves the body out.
    bool head = parser_->head_request();
    // The request stays here, its storage reused, when it is answered on this thread; a handler
    // elsewhere takes it.
    Request& request = request_;
    if (core_.options.trusted_proxies.empty()) {
      if (request.remote_address != remote_address_) request.remote_address = remote_address_;
    } else {
      request.remote_address = core_.options.trusted_proxies.client_address(remote_address_, request.headers);
    }

    core_.begin_request();
    counted_ = true;
    auto dispatch = core_.dispatch(request);
    if (dispatch.answer) return write(std::move(*dispatch.answer), keep_alive, head);
    if (dispatch.lane == Lane::control && core_.control) {
      return run_handler(*core_.control, std::move(request), keep_alive, head, false);
    }
    if (dispatch.lane == Lane::fibers && core_.try_start_fiber()) {
      return run_on_fiber(std::move(request), keep_alive, head);
    }
    if (!core_.try_enqueue()) {
      core_.shed_warning.note(core_.options.max_queued_requests);
      request.admission.reset();  // what the triage took for it goes back now, not at the next request
      return write(overloaded(), keep_alive, head);
    }
    run_handler(core_.workers, std::move(request), keep_alive, head, true);
  }

  void run_handler(asio::thread_pool& lane, Request request, bool keep_alive, bool head, bool queued) {
    // Not to be evicted while its handler runs. An answer made on this thread needs no mark: an
    // eviction waits for it anyway (counted_), and the mark would cost a lock and two set
    // operations per request.
    core_.connections.busy(id_);
    marked_busy_ = true;
    hand_to(lane, std::move(request), keep_alive, head, queued);
  }

  // The handler's run as a fiber on this connection's I/O thread: it suspends where it waits
  // instead of holding a thread, and neither the request nor its answer changes threads.
  void run_on_fiber(Request request, bool keep_alive, bool head) {
    core_.connections.busy(id_);
    marked_busy_ = true;
    fiber::spawn(executor_, core_.workers.get_executor(),
                 [self = shared_from_this(), request = std::move(request), keep_alive, head]() mutable {
                   Response response = self->core_.call_handler(request);
                   --self->core_.fibers;
                   if (response.deferral) {
                     return self->park(std::move(request), std::move(response.deferral), keep_alive, head);
                   }
                   request = Request{};  // gives back what the triage took for it (Request::admission) now
                   // Written once the fiber has ended (a post to this same thread): the next request on
                   // the connection is then read on the thread's own stack, not on this fiber's.
                   self->answer_later(std::move(response), keep_alive, head);
                 });
  }

  // The handler's run on `lane`. From any thread: the connection is marked busy already, and a
  // deferred request comes back here from whoever resumes it.
  void hand_to(asio::thread_pool& lane, Request request, bool keep_alive, bool head, bool queued) {
    asio::post(lane, [self = shared_from_this(), request = std::move(request), keep_alive, head, queued]() mutable {
      if (queued) --self->core_.queued;
      Response response = self->core_.call_handler(request);
      if (queued) ++self->core_.worker_tasks_done;
      if (response.deferral) return self->park(std::move(request), std::move(response.deferral), keep_alive, head);
      request = Request{};  // gives back what the triage took for it (Request::admission) now
      self->answer_later(std::move(response), keep_alive, head);
    });
  }

  // On the worker thread whose handler deferred: the request (with its admission, still counted in
  // flight and marked busy) waits in the registry, holding no thread, until its continuation acts.
  void park(Request request, std::shared_ptr<const Deferral> deferral, bool keep_alive, bool head) {
    request.wait_deadline = deferral->deadline;
    if (!request.admission) request.admission = deferral->admission;
    auto continuation = core_.deferred->park([self = shared_from_this(), request = std::move(request), keep_alive,
                                              head](std::optional<Response> answer) mutable {
      if (answer) return self->answer_later(std::move(*answer), keep_alive, head);
      if (!self->core_.try_enqueue()) {
        self->core_.shed_warning.note(self->core_.options.max_queued_requests);
        return self->answer_later(overloaded(), keep_alive, head);
      }
      self->hand_to(self->core_.workers, std::move(request), keep_alive, head, true);
    });
    // Null once the server stops: write() then finds it closing and drops the request.
    if (!continuation) return answer_later(overloaded(), keep_alive, head);
    try {
      deferral->park(continuation);
    } catch (const std::exception& e) {
      log::error("parking a deferred request failed", {{"error", e.what()}});
      continuation->answer(json_error(500, "api_error", "An internal error occurred."));
    }
  }

  // Back to the connection's I/O thread: only it touches the stream.
  void answer_later(Response response, bool keep_alive, bool head) {
    asio::post(executor_, [self = shared_from_this(), response = std::move(response), keep_alive, head]() mutable {
      self->write(std::move(response), keep_alive, head);
    });
  }

  void write(Response response, bool keep_alive, bool head) {
    if (closed_ || core_.closing || is_drop_marker(response)) {
      release();
      return close();
    }
    keep_alive = keep_alive && core_.accepting && core_.keep_alive_allowed && !evicted_;
    if (!serialize(std::move(response), keep_alive, head)) keep_alive = false;
    send([self = shared_from_this(), keep_alive](error_code ec) {
      self->release();
      // Evicted while the answer was being written: it was the last one.
      if (ec || !keep_alive || self->evicted_) return self->close();
      self->next_request();
    });
  }

  // Between two requests, with nothing of ours in progress on the socket: the one moment a
  // connection may change I/O threads (IoThreadBalance), else it reads on here.
  void next_request() {
    if (!core_.closing) {
      if (auto target = core_.balance.target_for(thread_)) return move_to(*target);
    }
    read_next();
  }

  // Hands the socket to a new session on `target`'s io_context, taking what was read ahead: the
  // descriptor leaves this thread's reactor and joins the other's, and the new session reads
  // the next request there. This one closes nothing and forwards what still reaches it.
  void move_to(std::size_t target) {
    error_code ec;
    int descriptor = stream_.socket().release(ec);
    if (ec) return read_next();  // still ours: carry on here
    tcp::socket socket(*core_.iocs[target]);
    socket.assign(core_.protocol, descriptor, ec);
    if (ec) {
      ::close(descriptor);
      log::warn("moving a connection to another I/O thread failed; closed it", {{"error", ec.message()}});
      return close();
    }
    core_.balance.moved(thread_, target);
    placed_ = false;
    closed_ = true;
    moved_ = true;
    auto next = std::make_shared<Session>(std::move(socket), *this, target);
    successor_ = next;
    next->start();
  }

  // Errors found while reading: answer, then close without resetting the unread request.
  void write_error(int status, const std::string& message, const Headers& headers = {}) {
    Response response = json_error(status, "invalid_request_error", message);
    response.headers = headers;
    serialize(std::move(response), false, false);
    send([self = shared_from_this()](error_code ec) {
      if (ec) return self->close();
      self->linger();
    });
  }

  // The answer as one buffer (wire_), or as Beast's message (response_) for what only Beast
  // frames. False when it could not be serialized: a 500 that closes the connection goes instead.
  bool serialize(Response response, bool keep_alive, bool head) {
    wire_.clear();
    response_.reset();
    try {
      if (append_wire_response(wire_, response, keep_alive, head)) return true;
      response_ = std::make_shared<BeastResponse>(beast_response(std::move(response), keep_alive, head));
      return true;
    } catch (const std::exception& e) {
      log::error("cannot serialize response", {{"error", e.what()}});
    }
    wire_.clear();
    response_ = std::make_shared<BeastResponse>(
        beast_response(json_error(500, "api_error", "An internal error occurred."), false, head));
    return false;
  }

  // Writes what serialize() made; `done(ec)` runs once it is written or failed, in this call when
  // the socket took it all at once (the usual case: an answer fits the socket's buffer), so an
  // answer costs no asynchronous write with its timer and scheduler round.
  template <typename Done>
  void send(Done done) {
    if (response_) {
      stream_.expires_after(core_.options.write_timeout);
      return bhttp::async_write(
          stream_, *response_, [self = shared_from_this(), done = std::move(done)](error_code ec, std::size_t) mutable {
            self->response_.reset();
            done(ec);
          });
    }
    error_code ec;
    std::size_t sent = stream_.socket().write_some(asio::buffer(wire_), ec);  // non-blocking: see start()
    if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {};
    if (ec || sent == wire_.size()) {
      written();
      return done(ec);
    }
    stream_.expires_after(core_.options.write_timeout);
    asio::async_write(stream_, asio::buffer(wire_) + sent,
                      [self = shared_from_this(), done = std::move(done)](error_code ec, std::size_t) mutable {
                        self->written();
                        done(ec);
                      });
  }

  void written() {
    if (wire_.capacity() > kKeptWireCapacity) std::string().swap(wire_);
  }

  void linger() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(discard_), [self = shared_from_this()](error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kLingerBytes) return self->close();
      self->drain();
    });
  }

  void release() {
    if (!counted_) return;
    counted_ = false;
    if (std::exchange(marked_busy_, false)) core_.connections.idle(id_);
    core_.end_request();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    core_.connections.closed(id_);
    leave_thread();
  }

  void leave_thread() {
    if (std::exchange(placed_, false)) core_.balance.closed(thread_);
  }

  const std::string remote_address_;
  beast::tcp_stream stream_;
  const asio::any_io_executor executor_;  // the connection's io_context, copied for worker threads
  ServerCore& core_;
  const ConnectionLimit::Id id_;
  const std::size_t thread_;          // the index of executor_'s io_context
  bool placed_ = true;                // counted on thread_ by the balance
  bool moved_ = false;                // the connection went on in a successor (move_to)
  std::weak_ptr<Session> successor_;  // that successor, for what reaches this one after the move
  beast::flat_buffer buffer_;
  Request request_;  // the request being read; kept for the next one when answered here
  std::optional<RequestParser> parser_;
  std::string wire_;                         // the answer being written, kept for the next one
  std::shared_ptr<BeastResponse> response_;  // or the answer Beast writes, alive until written
  std::chrono::steady_clock::time_point read_deadline_;
  std::array<char, 16 * 1024> discard_{};
  std::size_t drained_ = 0;
  std::size_t served_ = 0;
  bool idle_ = false;  // waiting for the first byte of a request
  bool closed_ = false;
  bool counted_ = false;      // holds one unit of in_flight until its response is written or dropped
  bool evicted_ = false;      // the connection cap took our place: close after the current answer
  bool marked_busy_ = false;  // ConnectionLimit::busy() for a request on a worker lane
};

void ServerCore::do_accept() {
  // A connection lives on one io_context at a time, which one thread runs: its handlers never run
  // concurrently, so it needs no strand (whose every hop costs a lock and a reference count).
  std::size_t thread = balance.placement();
  acceptor.async_accept(iocs[thread]->get_executor(), [this, thread](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      // Out of file descriptors and the like: pause instead of spinning on the error.
      log::warn("accept failed", {{"error", ec.message()}});
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](error_code wait_ec) {
        if (!wait_ec && acceptor.is_open()) do_accept();
      });
      return;
    }
    if (!accepting) {
      error_code ignored;
      socket.close(ignored);
      return;
    }
    auto admission = connections.admit();
    if (admission.evicted) make_room(*admission.evicted);
    if (!admission.admitted) {
      error_code ignored;
      socket.close(ignored);
    } else {
      // Answers go out as they are written: with Nagle's algorithm the second of two pipelined
      // answers would wait for the client's (delayed) acknowledgement of the first.
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      balance.placed(thread);
      std::make_shared<Session>(std::move(socket), *this, admission.id, thread)->start();
    }
    do_accept();
  });
}

void ServerCore::start_balancing() {
  if (iocs.size() < 2) return;
  for (auto& thread : io_threads) {
    clockid_t clock{};
    if (pthread_getcpuclockid(thread.native_handle(), &clock) != 0) return;  // no clocks: stay on one thread
    io_thread_clocks.push_back(clock);
  }
  io_thread_cpu_seconds.assign(io_thread_clocks.size(), 0.0);
  sample_io_threads();
}

// Every kBalancePeriod on the first I/O thread: each I/O thread's CPU over the period, as a share
// of one core, for the balance to decide how many are in use.
void ServerCore::sample_io_threads() {
  auto now = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(now - balance_sampled).count();
  std::vector<double> busy(io_thread_clocks.size(), 0.0);
  for (std::size_t i = 0; i < io_thread_clocks.size(); ++i) {
    timespec used{};
    if (clock_gettime(io_thread_clocks[i], &used) != 0) continue;
    double seconds = static_cast<double>(used.tv_sec) + static_cast<double>(used.tv_nsec) * 1e-9;
    busy[i] = (seconds - io_thread_cpu_seconds[i]) / wall;
    io_thread_cpu_seconds[i] = seconds;
  }
  // The first sample only sets the baseline.
  bool first = balance_sampled == std::chrono::steady_clock::time_point{};
  if (!first) balance.observe(busy);
  balance_sampled = now;
  bool quiet = !first && balance.active() == 1 &&
               std::all_of(busy.begin(), busy.end(), [](double b) { return b < kQuietBelow; });
  balance_timer.expires_after(quiet ? kQuietBalancePeriod : kBalancePeriod);
  balance_timer.async_wait([this](error_code ec) {
    if (!ec && !closing) sample_io_threads();
  });
}

void ServerCore::make_room(ConnectionLimit::Id id) {
  std::shared_ptr<Session> victim;
  {
    std::lock_guard lock(mutex);
    if (auto it = sessions.find(id); it != sessions.end()) victim = it->second.lock();
  }
  if (victim) victim->make_room();
}

void ServerCore::close_idle_sessions() {
  for (auto& session : live_sessions()) session->close_if_idle();
}

void ServerCore::close_all_sessions() {
  for (auto& session : live_sessions()) session->close_now();
}

}  // namespace

struct Server::Impl {
  Impl(ServerOptions options, Handler handler, Triage triage)
      : core(std::move(options), std::move(handler), std::move(triage)) {}
  ServerCore core;
};

Server::Server(ServerOptions options, Handler handler, InMemoryHandler in_memory)
    : Server(std::move(options), std::move(handler), triage_from(std::move(in_memory))) {}

Server::Server(ServerOptions options, Handler handler, Triage triage)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(triage))) {}

Server::~Server() { stop(); }

void Server::start() {
  auto& core = impl_->core;
  error_code ec;
  auto address = asio::ip::make_address(core.options.address, ec);
  if (ec) {
    throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                            "invalid listen address \"" + core.options.address + "\"");
  }
  tcp::endpoint endpoint(address, core.options.port);
  auto fail = [&](const char* step) {
    throw std::system_error(ec.value(), std::generic_category(),
                            std::string(step) + " " + core.options.address + ":" + std::to_string(core.options.port));
  };
  core.acceptor.open(endpoint.protocol(), ec);
  if (ec) fail("cannot open a socket for");
  // A restarted server must not wait out TIME_WAIT connections of its predecessor.
  core.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) fail("cannot set SO_REUSEADDR on");
  core.acceptor.bind(endpoint, ec);
  if (ec) fail("cannot bind");
  core.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("cannot listen on");
  core.bound_port = core.acceptor.local_endpoint().port();
  core.protocol = endpoint.protocol();

  core.do_accept();
  for (auto& ioc : core.iocs) {
    core.work.push_back(asio::make_work_guard(*ioc));
    core.io_threads.emplace_back([&core, &ioc = *ioc] {
      for (;;) {
        try {
          ioc.run();
          return;
        } catch (const std::exception& e) {
          log::error("I/O thread caught an exception", {{"error", e.what()}});
        }
      }
    });
  }
  asio::post(*core.iocs.front(), [&core] { core.start_balancing(); });
}

std::uint16_t Server::port() const { return impl_->core.bound_port; }

void Server::close_connections_after_each_answer() { impl_->core.keep_alive_allowed = false; }

void Server::stop_accepting() {
  auto& core = impl_->core;
  core.accepting = false;
  asio::post(core.acceptor.get_executor(), [&core] {
    error_code ignored;
    core.acceptor.close(ignored);
    core.accept_retry.cancel();
  });
  core.close_idle_sessions();
}

bool Server::wait_idle(std::chrono::milliseconds timeout) {
  auto& core = impl_->core;
  std::unique_lock lock(core.mutex);
  return core.changed.wait_for(lock, timeout, [&] { return core.in_flight.load() == 0; });
}

void Server::stop() {
  auto& core = impl_->core;
  if (core.stopped.exchange(true)) return;
  stop_accepting();
  core.closing = true;
  core.close_all_sessions();
  // Deferred requests are dropped (their sessions with them); a continuation used later does nothing.
  core.deferred->close();
  // Handlers cannot be interrupted; their responses find the connection closing and are dropped.
  core.workers.join();
  if (core.control) core.control->join();
  {
    std::unique_lock lock(core.mutex);
    core.changed.wait_for(lock, kStopGrace, [&] { return core.sessions.empty(); });
  }
  core.work.clear();
  for (auto& ioc : core.iocs) ioc->stop();
  for (auto& thread : core.io_threads) thread.join();
  core.io_threads.clear();
}

std::size_t Server::in_flight() const { return impl_->core.in_flight.load(); }

bool Server::workers_responsive(std::chrono::milliseconds timeout) {
  auto& core = impl_->core;
  auto ran = std::make_shared<std::atomic<bool>>(false);
  auto done_before = core.worker_tasks_done.load();
  asio::post(core.workers, [ran] { ran->store(true); });
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (ran->load() || core.worker_tasks_done.load() != done_before) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace rr::http
