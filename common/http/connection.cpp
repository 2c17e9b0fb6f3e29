// One connection on its I/O thread: reading and parsing each request (keep-alive, pipelining, the
// limits and timeouts), handing it to the triage and the scheduler, writing the answer, and
// closing. Between two requests it may move to another I/O thread (IoThreadBalance). With the
// client's and beast_response.cpp, the translation units that include Beast.
#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <string>
#include <utility>

#include "common/base/log.hpp"
#include "common/http/beast_response.hpp"
#include "common/http/io_thread_move.hpp"
#include "common/http/parse_buffered.hpp"
#include "common/http/request_framing.hpp"
#include "common/http/request_parser.hpp"
#include "common/http/response_wire.hpp"
#include "common/http/server_answers.hpp"
#include "common/http/server_core.hpp"

namespace rr::http::detail {
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
// A connection keeps its answer buffer for the next answer up to this size (the usual answer is
// well under 1 KiB); a larger one, such as a long list, is given back once written.
constexpr std::size_t kKeptWireCapacity = 16 * 1024;
// The first read of a request: one whole usual request, more of a pipeline or a large body read on.
constexpr std::size_t kFirstReadBytes = 4096;
// Beast's reads ask for up to 64 KiB at a time (http::async_read's read_size).
constexpr std::size_t kReadRoomBytes = 64 * 1024;

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

}  // namespace

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
    parser_->trailer_limit(core_.options.header_limit);
    parser_->body_limit(core_.options.body_limit);
    // Beast bounds the header section, but keeps a chunk's header line (its extensions) and the
    // trailer in the buffer until their end arrives, however long they grow. The parser consumes
    // everything else as it comes, so a buffer the size of a header plus one read holds every
    // well-formed request, and past it the read fails (buffer_overflow, answered 431).
    buffer_.max_size(core_.options.header_limit + kReadRoomBytes);
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
        return write_error(431, "Request headers (or the trailer of a chunked body) are larger than " +
                                    std::to_string(core_.options.header_limit) + " bytes.");
      }
      if (ec == bhttp::error::buffer_overflow) {
        return write_error(431, "A chunk's header line or the trailer of a chunked body is larger than " +
                                    std::to_string(core_.options.header_limit) + " bytes.");
      }
      // A request cut short (timeout, reset, EOF midway) leaves nobody to answer.
      if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
          ec.category() != bhttp::make_error_code(bhttp::error::bad_method).category()) {
        return close();
      }
      return write_error(400, "Malformed HTTP request.");
    }
    if (core_.closing) return close();
    if (auto rejection =
            check_request_trailer(RequestTrailer{parser_->trailer_fields(), parser_->folded_trailer_field()})) {
      return write_error(rejection->status, rejection->message, rejection->headers);
    }

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
    auto dispatch = core_.scheduler.triage(request);
    if (dispatch.answer) return write(std::move(*dispatch.answer), keep_alive, head);
    auto placement = core_.scheduler.place(dispatch.lane);
    if (placement == Placement::refused) {
      request.admission.reset();  // what the triage took for it goes back now, not at the next request
      return write(overloaded_response(), keep_alive, head);
    }
    // Not to be evicted while its handler runs. An answer made on this thread needs no mark: an
    // eviction waits for it anyway (counted_), and the mark would cost a lock and two set
    // operations per request.
    core_.connections.busy(id_);
    marked_busy_ = true;
    // The answer comes back from whichever thread has it; only this connection's thread writes.
    core_.scheduler.run(placement, std::move(request), executor_,
                        [self = shared_from_this(), keep_alive, head](Response response) {
                          self->answer_later(std::move(response), keep_alive, head);
                        });
  }

  // Back to the connection's I/O thread: only it touches the stream.
  void answer_later(Response response, bool keep_alive, bool head) {
    asio::post(executor_, [self = shared_from_this(), response = std::move(response), keep_alive, head]() mutable {
      self->write(std::move(response), keep_alive, head);
    });
  }

  void write(Response response, bool keep_alive, bool head) {
    if (closed_ || core_.closing || (core_.options.drop_marked_answers && is_drop_marker(response))) {
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
    auto socket = move_socket(stream_.socket(), *core_.iocs[target], core_.protocol);
    if (!socket) {
      if (stream_.socket().is_open()) return read_next();  // still ours: carry on here
      return close();
    }
    core_.balance.moved(thread_, target);
    placed_ = false;
    closed_ = true;
    moved_ = true;
    auto next = std::make_shared<Session>(std::move(*socket), *this, target);
    successor_ = next;
    next->start();
  }

  // Errors found while reading: answer, then close without resetting the unread request.
  void write_error(int status, const std::string& message, const Headers& headers = {}) {
    Response response = error_response(status, "invalid_request_error", message);
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
        beast_response(error_response(500, "api_error", "An internal error occurred."), false, head));
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

void ServerCore::serve(tcp::socket socket, ConnectionLimit::Id id, std::size_t thread) {
  std::make_shared<Session>(std::move(socket), *this, id, thread)->start();
}

namespace {

std::vector<std::shared_ptr<Session>> live_sessions(ServerCore& core) {
  std::vector<std::shared_ptr<Session>> out;
  std::lock_guard lock(core.mutex);
  for (auto& [id, weak] : core.sessions) {
    if (auto session = weak.lock()) out.push_back(std::move(session));
  }
  return out;
}

}  // namespace

void ServerCore::make_room(ConnectionLimit::Id id) {
  std::shared_ptr<Session> victim;
  {
    std::lock_guard lock(mutex);
    if (auto it = sessions.find(id); it != sessions.end()) victim = it->second.lock();
  }
  if (victim) victim->make_room();
}

void ServerCore::close_idle_sessions() {
  for (auto& session : live_sessions(*this)) session->close_if_idle();
}

void ServerCore::close_all_sessions() {
  for (auto& session : live_sessions(*this)) session->close_now();
}

}  // namespace rr::http::detail
