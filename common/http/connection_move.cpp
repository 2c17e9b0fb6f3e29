// A connection between two requests, with nothing of its own pending on the socket: the one moment
// it may change I/O threads (IoThreadBalance's decision). The same connection goes on there: its
// socket leaves this thread's reactor and joins the other's (move_socket), and what it read ahead,
// its count of requests and its place in the registry come along, since nothing else changes.
#include <boost/asio/post.hpp>

#include "common/http/connection.hpp"
#include "common/http/io_thread_move.hpp"

namespace rr::http::detail {

using S = ConnectionState;

void ServerConnection::next_request() {
  enter(S::between_requests);
  if (!core_.closing) {
    if (auto target = core_.balance.target_for(thread_.load(std::memory_order_relaxed))) return move_to(*target);
  }
  read_next();
}

void ServerConnection::move_to(std::size_t target) {
  enter(S::moving);
  auto socket = move_socket(stream_->socket(), *core_.iocs[target], core_.protocol);
  if (!socket) {
    if (!stream_->socket().is_open()) return close();
    enter(S::between_requests);  // still ours: carry on here
    return read_next();
  }
  core_.balance.moved(thread_.load(), target);
  stream_.emplace(std::move(*socket));
  boost::system::error_code ignored;
  stream_->socket().non_blocking(true, ignored);  // as start() set it: send() relies on it
  executor_ = stream_->get_executor();
  // From here the stop steps post to the new thread. One may run there before the connection
  // arrives (and close it); the arrival below then finds it closed.
  thread_.store(target);
  boost::asio::post(executor_, [self = shared_from_this()] {
    if (self->state_ == S::closed) return;
    self->enter(S::between_requests);
    self->read_next();
  });
}

}  // namespace rr::http::detail
