// Reading one request on a connection: the keep-alive wait for its first byte, its head and body
// (parsed from what was read ahead when it is all there), "100 Continue", the limits and the
// timeouts, and the answers to what is found wrong while reading (413, 431, 400, the framing
// checks). A whole request goes on to connection_dispatch.cpp.
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <string>

#include "common/http/connection.hpp"
#include "common/http/parse_buffered.hpp"
#include "common/http/request_framing.hpp"

namespace rr::http::detail {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using error_code = boost::system::error_code;
using S = ConnectionState;

// A connection keeps its last request's storage for the next one up to this size (as it keeps its
// answer buffer, connection_write.cpp): one that sent a large request and then idles does not hold it.
constexpr std::size_t kKeptRequestBytes = 16 * 1024;
// The first read of a request: one whole usual request, more of a pipeline or a large body read on.
constexpr std::size_t kFirstReadBytes = 4096;
// A read past the first asks for up to 64 KiB, as Beast's own http::async_read does.
constexpr std::size_t kReadRoomBytes = 64 * 1024;

// The storage a kept Request holds.
std::size_t kept_bytes(const Request& request) {
  std::size_t bytes =
      request.body.capacity() + request.target.capacity() + request.path.capacity() + request.query.capacity();
  for (const auto& [name, value] : request.headers) bytes += name.capacity() + value.capacity();
  return bytes;
}

}  // namespace

void ServerConnection::read_next() {
  if (state_ == S::closed) return;
  if (core_.closing || (!core_.accepting && buffer_.size() == 0)) return close();
  if (kept_bytes(request_) > kKeptRequestBytes) request_ = Request{};
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
    enter(S::reading_request);
    read_deadline_ = std::chrono::steady_clock::now() + core_.options.read_timeout;
    return asio::post(executor_, [self = shared_from_this()] {
      if (self->state_ != S::closed) self->read_request();
    });
  }
  // Waiting for the first byte is keep-alive idling, timed separately from reading a request;
  // for a fresh connection the request's own read timeout starts at accept. The wait's deadline
  // is the I/O thread's sweep's to keep (IdleSweep), not a timer of its own.
  enter(S::awaiting_request);
  auto now = std::chrono::steady_clock::now();
  read_deadline_ = now + core_.options.read_timeout;
  sweep().add(*this, served_ == 0 ? read_deadline_ : now + core_.options.idle_timeout);
  wait_for_first_bytes();
}

// On the socket itself, with the one buffer: Asio then reads with recv(2), where through Beast's
// stream (a buffer sequence of its own) it used recvmsg(2), whose message header and vector the
// kernel copies in; and a read op, unlike a readiness wait, costs no epoll_ctl(2) to arm.
void ServerConnection::wait_for_first_bytes() {
  stream_->socket().async_read_some(
      buffer_.prepare(kFirstReadBytes),
      [self = shared_from_this()](error_code ec, std::size_t n) { self->on_first_bytes(ec, n); });
}

void ServerConnection::idle_deadline_passed() {
  if (state_ == S::awaiting_request) close();
}

void ServerConnection::on_first_bytes(error_code ec, std::size_t n) {
  sweep().remove(*this);
  if (state_ == S::closed) return;
  if (ec) return close();
  enter(S::reading_request);
  buffer_.commit(n);
  if (served_ > 0) read_deadline_ = std::chrono::steady_clock::now() + core_.options.read_timeout;
  read_request();
}

// Headers first: a body over the limit is refused from its Content-Length alone, and a client
// that sent "Expect: 100-continue" (curl does for large bodies) is told to go on. A request
// usually arrives whole in one read: it is then parsed here, from the buffer, without an
// asynchronous read that would only complete at once (a scheduler round and a timer each).
void ServerConnection::read_request() {
  error_code ec;
  if (parse_buffered(buffer_, *parser_, false, ec)) return on_head(ec);
  read_more(false);
}

void ServerConnection::on_head(error_code ec) {
  if (state_ == S::closed) return;
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

void ServerConnection::send_continue() {
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  asio::async_write(*stream_, asio::buffer(kContinue.data(), kContinue.size()),
                    [self = shared_from_this()](error_code ec, std::size_t) {
                      if (self->state_ == S::closed) return;
                      if (ec) return self->close();
                      self->read_body();
                    });
}

void ServerConnection::read_body() {
  error_code ec;
  if (parse_buffered(buffer_, *parser_, true, ec)) return on_read(ec);
  read_more(true);
}

// The parser has taken what it can from the buffer and needs more. Read it here, not through
// Beast's http::async_read, which first hands the parser the unchanged buffer again: Boost 1.81's
// parser expects more bytes on every call after need_more, and given a last chunk ("0\r\n") again
// as it was, it fails an assertion (parse_buffered.hpp holds back the other way to reach it).
void ServerConnection::read_more(bool whole) {
  // As Beast's reads size theirs; none is left once the buffer holds its maximum, which only a
  // chunk line or a trailer that never ends can reach (the header has its own, smaller limit).
  std::size_t room = boost::beast::read_size(buffer_, kReadRoomBytes);
  if (room == 0) {
    error_code overflow = bhttp::error::buffer_overflow;
    return whole ? on_read(overflow) : on_head(overflow);
  }
  stream_->expires_at(read_deadline_);
  stream_->async_read_some(buffer_.prepare(room), [self = shared_from_this(), whole](error_code ec, std::size_t n) {
    if (self->state_ == S::closed) return;
    // End of stream, a reset or the read deadline: a request cut short leaves nobody to answer.
    if (ec) return self->close();
    self->buffer_.commit(n);
    whole ? self->read_body() : self->read_request();
  });
}

void ServerConnection::on_read(error_code ec) {
  if (state_ == S::closed) return;
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
    // The parser's errors are the client's; a read that fails has closed in read_more.
    if (ec.category() != bhttp::make_error_code(bhttp::error::bad_method).category()) return close();
    return write_error(400, "Malformed HTTP request.");
  }
  if (core_.closing) return close();
  if (auto rejection =
          check_request_trailer(RequestTrailer{parser_->trailer_fields(), parser_->folded_trailer_field()})) {
    return write_error(rejection->status, rejection->message, rejection->headers);
  }
  dispatch();
}

}  // namespace rr::http::detail
