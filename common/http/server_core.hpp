// What a server's parts share (server.cpp, listener.cpp, connection*.cpp): the options, the
// threads and their io_contexts, the registry of connections and the count of requests in flight,
// the stop flags, and the scheduler that runs handlers. Internal to common/http/.
//
// Destruction order matters: the connection registry, the in-flight count and the scheduler's
// handler outlive the io_contexts, whose destruction may destroy the last sessions and unwind
// suspended fibers; the scheduler's thread pools, whose queued work holds sessions, go first of
// all (~ServerCore).
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/http/connection_limit.hpp"
#include "common/http/idle_sweep.hpp"
#include "common/http/io_thread_balance.hpp"
#include "common/http/io_thread_load.hpp"
#include "common/http/request_scheduler.hpp"
#include "common/http/server.hpp"

namespace rr::http::detail {

class ServerConnection;  // one connection (connection.hpp)

struct ServerCore {
  ServerCore(ServerOptions opts, Handler handler, Triage triage);
  ~ServerCore() { scheduler.destroy_lanes(); }
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  ServerOptions options;
  ConnectionLimit connections;

  mutable std::mutex mutex;
  std::condition_variable changed;  // in_flight reached 0 or a session ended
  // Counted without the mutex, which only a drop to zero takes (to wake wait_idle()).
  std::atomic<std::size_t> in_flight{0};
  std::unordered_map<ConnectionLimit::Id, std::weak_ptr<ServerConnection>> sessions;

  std::atomic<bool> accepting{true};
  std::atomic<bool> keep_alive_allowed{true};  // false from close_connections_after_each_answer()
  std::atomic<bool> closing{false};
  std::atomic<bool> stopped{false};
  std::uint16_t bound_port = 0;
  RequestScheduler scheduler;

  // One io_context per I/O thread: a connection's work runs on one thread at a time, so no
  // thread is woken for another's socket. Which thread, and how many are in use, the balance
  // decides; a connection changes threads only between requests (connection_move.cpp).
  std::vector<std::unique_ptr<boost::asio::io_context>> iocs;
  std::vector<std::unique_ptr<IdleSweep>> idle_sweeps;  // one per io_context, the same index
  std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  IoThreadBalance balance;
  IoThreadLoad load;  // the balance's clock, on the first I/O thread
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::ip::tcp protocol = boost::asio::ip::tcp::v4();  // the listener's, shared by accepted sockets
  boost::asio::steady_timer accept_retry;
  std::vector<std::thread> io_threads;

  void begin_request() { in_flight.fetch_add(1); }

  void end_request() {
    if (in_flight.fetch_sub(1) != 1) return;
    // Under the mutex, so a waiter that has just seen in_flight above zero is asleep already.
    std::lock_guard lock(mutex);
    changed.notify_all();
  }

  // listener.cpp: binds and listens (throws std::system_error), accepts, stops accepting.
  void listen();
  void do_accept();
  void close_listener();

  // connection.cpp: a new connection's session, and the stop steps over every live session.
  void serve(boost::asio::ip::tcp::socket socket, ConnectionLimit::Id id, std::size_t thread);
  void make_room(ConnectionLimit::Id id);
  void close_idle_sessions();
  void close_all_sessions();
};

}  // namespace rr::http::detail
