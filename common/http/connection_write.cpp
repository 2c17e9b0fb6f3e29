// Writing on a connection: an answer (as one buffer written at once when the socket takes it, or
// as Beast's message for what only Beast frames), what happens after it (the next request, or
// closing), and the error answer found while reading, after which the connection lingers to drain
// what the client still sends so the kernel does not reset the answer away.
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>
#include <exception>
#include <string>
#include <utility>

#include "common/base/log.hpp"
#include "common/http/connection.hpp"
#include "common/http/response_wire.hpp"
#include "common/http/server_answers.hpp"

namespace rr::http::detail {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using S = ConnectionState;

// After an error response that closes the connection, unread request bytes would make the kernel
// send RST and the client could lose the response; drain up to this much for this long first.
constexpr std::size_t kLingerBytes = 1024 * 1024;
constexpr std::chrono::milliseconds kLingerTime{2000};
// A connection keeps its answer buffer for the next answer up to this size (the usual answer is
// well under 1 KiB); a larger one, such as a long list, is given back once written.
constexpr std::size_t kKeptWireCapacity = 16 * 1024;

bool is_drop_marker(const Response& response) { return response.header(kDropConnectionHeader).has_value(); }

}  // namespace

// Writes what serialize() made; `done(ec)` runs once it is written or failed, in this call when
// the socket took it all at once (the usual case: an answer fits the socket's buffer), so an
// answer costs no asynchronous write with its timer and scheduler round.
template <typename Done>
void ServerConnection::send(Done done) {
  if (response_) {
    stream_->expires_after(core_.options.write_timeout);
    return bhttp::async_write(*stream_, *response_,
                              [self = shared_from_this(), done = std::move(done)](error_code ec, std::size_t) mutable {
                                self->response_.reset();
                                done(ec);
                              });
  }
  error_code ec;
  std::size_t sent = stream_->socket().write_some(asio::buffer(wire_), ec);  // non-blocking: see start()
  if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {};
  if (ec || sent == wire_.size()) {
    written();
    return done(ec);
  }
  stream_->expires_after(core_.options.write_timeout);
  asio::async_write(*stream_, asio::buffer(wire_) + sent,
                    [self = shared_from_this(), done = std::move(done)](error_code ec, std::size_t) mutable {
                      self->written();
                      done(ec);
                    });
}

// The answer to the request in hand, from any lane, on this thread (answer_later).
void ServerConnection::write(Response response, bool keep_alive, bool head) {
  if (state_ == S::closed || core_.closing || (core_.options.drop_marked_answers && is_drop_marker(response))) {
    release();
    return close();
  }
  enter(S::writing_answer);
  keep_alive = keep_alive && core_.accepting && core_.keep_alive_allowed && !evicted_;
  if (!serialize(std::move(response), keep_alive, head)) keep_alive = false;
  send([self = shared_from_this(), keep_alive](error_code ec) {
    self->release();
    if (self->state_ == S::closed) return;
    // Evicted while the answer was being written: it was the last one.
    if (ec || !keep_alive || self->evicted_) return self->close();
    self->next_request();
  });
}

// Errors found while reading: answer, then close without resetting the unread request.
void ServerConnection::write_error(int status, const std::string& message, const Headers& headers) {
  enter(S::refusing);
  Response response = error_response(status, "invalid_request_error", message);
  response.headers = headers;
  serialize(std::move(response), false, false);
  send([self = shared_from_this()](error_code ec) {
    if (self->state_ == S::closed) return;
    if (ec) return self->close();
    self->linger();
  });
}

// The answer as one buffer (wire_), or as Beast's message (response_) for what only Beast
// frames. False when it could not be serialized: a 500 that closes the connection goes instead.
bool ServerConnection::serialize(Response response, bool keep_alive, bool head) {
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

void ServerConnection::written() {
  if (wire_.capacity() > kKeptWireCapacity) std::string().swap(wire_);
}

void ServerConnection::linger() {
  enter(S::lingering);
  error_code ignored;
  stream_->socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_->expires_after(kLingerTime);
  drain();
}

void ServerConnection::drain() {
  stream_->async_read_some(asio::buffer(discard_), [self = shared_from_this()](error_code ec, std::size_t n) {
    self->drained_ += n;
    if (ec || self->drained_ > kLingerBytes) return self->close();
    self->drain();
  });
}

// The request's count in flight and its busy mark go back once its answer is written or dropped.
void ServerConnection::release() {
  if (!counted_) return;
  counted_ = false;
  if (std::exchange(marked_busy_, false)) core_.connections.idle(id_);
  core_.end_request();
}

}  // namespace rr::http::detail
