// One server connection, ServerConnection (internal to common/http/; the client's connection is
// client_exchange.hpp's): its state (ConnectionState, connection_state.hpp) and the parts that move
// it, one file each: connection.cpp its life (start, the stop steps that reach it from other
// threads, closing), connection_read.cpp reading and parsing a request, connection_dispatch.cpp
// handing it to the triage and the scheduler, connection_write.cpp writing the answer,
// connection_move.cpp the move to another I/O thread between two requests. Only for translation
// units that include Beast anyway.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "common/http/beast_response.hpp"
#include "common/http/connection_state.hpp"
#include "common/http/idle_sweep.hpp"
#include "common/http/request_parser.hpp"
#include "common/http/server_core.hpp"

namespace rr::http::detail {

class ServerConnection final : public std::enable_shared_from_this<ServerConnection>, private IdleWaiter {
 public:
  ServerConnection(boost::asio::ip::tcp::socket socket, ServerCore& core, ConnectionLimit::Id id, std::size_t thread);
  ~ServerConnection();
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  void start();

  // From any thread; each acts on the connection's own I/O thread, wherever it has moved by then.
  // Graceful stop: a connection waiting for its next request has nothing to finish.
  void close_if_idle();
  void close_now();
  // The connection cap needs our place: go now unless a request is in progress, whose answer is
  // then the last one on this connection.
  void make_room();

 private:
  // connection.cpp
  void enter(ConnectionState next);
  // Runs `action(*this)` on the connection's I/O thread, following it if it moves meanwhile.
  template <typename Action>
  void on_home_thread(Action action);
  void close();

  // connection_read.cpp
  void read_next();
  void wait_for_first_bytes();
  IdleSweep& sweep() { return *core_.idle_sweeps[thread_.load(std::memory_order_relaxed)]; }
  void idle_deadline_passed() override;
  void on_first_bytes(boost::system::error_code ec, std::size_t n);
  void read_request();
  void on_head(boost::system::error_code ec);
  void send_continue();
  void read_body();
  void read_more(bool whole);
  void on_read(boost::system::error_code ec);

  // connection_dispatch.cpp
  void dispatch();
  void answer_later(Response response, bool keep_alive, bool head);

  // connection_write.cpp
  void write(Response response, bool keep_alive, bool head);
  void write_error(int status, const std::string& message, const Headers& headers = {});
  bool serialize(Response response, bool keep_alive, bool head);
  template <typename Done>
  void send(Done done);
  void written();
  void linger();
  void drain();
  void release();

  // connection_move.cpp
  void next_request();
  void move_to(std::size_t target);

  ConnectionState state_ = ConnectionState::between_requests;
  const std::string remote_address_;
  // Replaced by a stream on the new thread's io_context when the connection moves.
  std::optional<boost::beast::tcp_stream> stream_;
  boost::asio::any_io_executor executor_;  // the connection's io_context, copied for worker threads
  ServerCore& core_;
  const ConnectionLimit::Id id_;
  // The index of executor_'s io_context. Atomic for the stop steps, which post to it from other
  // threads; the connection's own handlers only ever read the value their thread stored.
  std::atomic<std::size_t> thread_;
  boost::beast::flat_buffer buffer_;  // what was read ahead: goes along when the connection moves
  Request request_;                   // the request being read; kept for the next one when answered here
  std::optional<RequestParser> parser_;
  std::string wire_;                         // the answer being written, kept for the next one
  std::shared_ptr<BeastResponse> response_;  // or the answer Beast writes, alive until written
  std::chrono::steady_clock::time_point read_deadline_;
  std::array<char, 16 * 1024> discard_{};
  std::size_t drained_ = 0;
  std::size_t served_ = 0;
  // Not states but what the connection holds or was told, each across several states:
  bool counted_ = false;      // one unit of in_flight, from handling until its answer is written or dropped
  bool marked_busy_ = false;  // ConnectionLimit::busy() for a request on a worker lane
  bool evicted_ = false;      // the connection cap took our place: close after the current answer
};

}  // namespace rr::http::detail
