// A whole request handed on from its connection: counted in flight, answered by the triage on the
// I/O thread or placed on a lane (refused with 503 when the workers' queue is full), and its answer
// brought back to the connection's own I/O thread to be written (connection_write.cpp).
#include <boost/asio/post.hpp>
#include <utility>

#include "common/http/connection.hpp"
#include "common/http/request_scheduler.hpp"
#include "common/http/server_answers.hpp"

namespace rr::http::detail {

void ServerConnection::dispatch() {
  enter(ConnectionState::handling);
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
  auto triaged = core_.scheduler.triage(request);
  if (triaged.answer) return write(std::move(*triaged.answer), keep_alive, head);
  auto placement = core_.scheduler.place(triaged.lane);
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

// Back to the connection's I/O thread: only it touches the stream. The connection does not move
// while a request is in progress, so executor_ is the thread it was read on.
void ServerConnection::answer_later(Response response, bool keep_alive, bool head) {
  boost::asio::post(executor_, [self = shared_from_this(), response = std::move(response), keep_alive, head]() mutable {
    self->write(std::move(response), keep_alive, head);
  });
}

}  // namespace rr::http::detail
