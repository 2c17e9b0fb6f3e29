// One connection's life: registered at start, the stop steps and the connection cap reaching it
// from other threads, every change of state checked against the table (connection_state.hpp), and
// closing. Reading, handing over, writing and moving are in connection_read.cpp,
// connection_dispatch.cpp, connection_write.cpp and connection_move.cpp.
#include "common/http/connection.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/base/log.hpp"

namespace rr::http::detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

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

}  // namespace

ServerConnection::ServerConnection(tcp::socket socket, ServerCore& core, ConnectionLimit::Id id, std::size_t thread)
    : remote_address_(peer_address(socket)),
      stream_(std::in_place, std::move(socket)),
      executor_(stream_->get_executor()),
      core_(core),
      id_(id),
      thread_(thread) {}

ServerConnection::~ServerConnection() {
  // Only when the io_context was torn down with our handlers still queued.
  if (counted_) core_.end_request();
  if (state_ != ConnectionState::closed) core_.balance.closed(thread_.load());
  core_.connections.closed(id_);
  std::lock_guard lock(core_.mutex);
  if (auto it = core_.sessions.find(id_); it != core_.sessions.end() && it->second.lock() == nullptr) {
    core_.sessions.erase(it);
  }
  core_.changed.notify_all();
}

void ServerConnection::start() {
  {
    std::lock_guard lock(core_.mutex);
    core_.sessions[id_] = weak_from_this();
  }
  // send() tries a synchronous write first, which must return rather than wait when the
  // socket's buffer is full. Asio's own asynchronous operations work either way.
  error_code ignored;
  stream_->socket().non_blocking(true, ignored);
  asio::dispatch(executor_, [self = shared_from_this()] { self->read_next(); });
}

void ServerConnection::enter(ConnectionState next) {
#ifndef NDEBUG
  if (!transition_allowed(state_, next)) {
    log::error("connection state change the table does not allow",
               {{"from", std::string(state_name(state_))}, {"to", std::string(state_name(next))}});
    std::abort();
  }
#endif
  state_ = next;
}

template <typename Action>
void ServerConnection::on_home_thread(Action action) {
  auto& home = *core_.iocs[thread_.load()];
  asio::post(home, [self = shared_from_this(), action = std::move(action)]() mutable {
    // Posted before the connection moved, it runs on the thread the connection left: follow it.
    if (!self->core_.iocs[self->thread_.load()]->get_executor().running_in_this_thread()) {
      return self->on_home_thread(std::move(action));
    }
    action(*self);
  });
}

void ServerConnection::close_if_idle() {
  on_home_thread([](ServerConnection& self) {
    if (self.state_ == ConnectionState::awaiting_request) self.close();
  });
}

void ServerConnection::close_now() {
  on_home_thread([](ServerConnection& self) { self.close(); });
}

void ServerConnection::make_room() {
  on_home_thread([](ServerConnection& self) {
    if (self.state_ == ConnectionState::handling || self.state_ == ConnectionState::writing_answer) {
      self.evicted_ = true;
    } else {
      self.close();
    }
  });
}

void ServerConnection::close() {
  if (state_ == ConnectionState::closed) return;
  enter(ConnectionState::closed);
  error_code ignored;
  stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_->close();
  core_.connections.closed(id_);
  // Counted on its thread by the balance until now (a move carries the count to the new thread).
  core_.balance.closed(thread_.load());
}

void ServerCore::serve(tcp::socket socket, ConnectionLimit::Id id, std::size_t thread) {
  std::make_shared<ServerConnection>(std::move(socket), *this, id, thread)->start();
}

namespace {

std::vector<std::shared_ptr<ServerConnection>> live_connections(ServerCore& core) {
  std::vector<std::shared_ptr<ServerConnection>> out;
  std::lock_guard lock(core.mutex);
  for (auto& [id, weak] : core.sessions) {
    if (auto connection = weak.lock()) out.push_back(std::move(connection));
  }
  return out;
}

}  // namespace

void ServerCore::make_room(ConnectionLimit::Id id) {
  std::shared_ptr<ServerConnection> victim;
  {
    std::lock_guard lock(mutex);
    if (auto it = sessions.find(id); it != sessions.end()) victim = it->second.lock();
  }
  if (victim) victim->make_room();
}

void ServerCore::close_idle_sessions() {
  for (auto& connection : live_connections(*this)) connection->close_if_idle();
}

void ServerCore::close_all_sessions() {
  for (auto& connection : live_connections(*this)) connection->close_now();
}

}  // namespace rr::http::detail
