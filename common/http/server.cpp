// The server's life: its parts built (ServerCore), the I/O threads started, and the steps of a
// graceful stop. The parts: listener.cpp (accepting), connection*.cpp (one connection: its states,
// reads and writes), request_scheduler.* (where handlers run), io_thread_load.* and io_thread_move.*
// (the I/O threads' balance).
#include "common/http/server.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "common/base/log.hpp"
#include "common/http/server_core.hpp"

namespace rr::http {
namespace {

namespace asio = boost::asio;

// How long stop() lets sessions run their close handlers before stopping the I/O threads.
constexpr std::chrono::milliseconds kStopGrace{2000};

// Adapts the plain in-memory hook to a triage: answered, or on to the workers.
Triage triage_from(InMemoryHandler in_memory) {
  if (!in_memory) return nullptr;
  return [in_memory = std::move(in_memory)](Request& request) { return Dispatch{in_memory(request), Lane::workers}; };
}

std::vector<std::unique_ptr<asio::io_context>> make_io_contexts(std::size_t threads) {
  std::vector<std::unique_ptr<asio::io_context>> out;
  for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i)
    out.push_back(std::make_unique<asio::io_context>(1));
  return out;
}

std::vector<std::unique_ptr<IdleSweep>> make_idle_sweeps(const std::vector<std::unique_ptr<asio::io_context>>& contexts,
                                                         std::chrono::milliseconds period) {
  std::vector<std::unique_ptr<IdleSweep>> out;
  for (const auto& context : contexts) out.push_back(std::make_unique<IdleSweep>(*context, period));
  return out;
}

}  // namespace

namespace detail {

ServerCore::ServerCore(ServerOptions opts, Handler handler, Triage triage)
    : options(std::move(opts)),
      connections(options.max_connections),
      scheduler(options, std::move(handler), std::move(triage)),
      iocs(make_io_contexts(options.io_threads)),
      idle_sweeps(make_idle_sweeps(iocs, idle_sweep_period(options.read_timeout, options.idle_timeout))),
      balance(iocs.size()),
      load(*iocs.front(), balance, closing),
      acceptor(asio::make_strand(*iocs.front())),
      accept_retry(acceptor.get_executor()) {}

}  // namespace detail

struct Server::Impl {
  Impl(ServerOptions options, Handler handler, Triage triage)
      : core(std::move(options), std::move(handler), std::move(triage)) {}
  detail::ServerCore core;
};

Server::Server(ServerOptions options, Handler handler, InMemoryHandler in_memory)
    : Server(std::move(options), std::move(handler), triage_from(std::move(in_memory))) {}

Server::Server(ServerOptions options, Handler handler, Triage triage)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(triage))) {}

Server::~Server() { stop(); }

void Server::start() {
  auto& core = impl_->core;
  core.listen();
  core.do_accept();
  for (std::size_t index = 0; index < core.iocs.size(); ++index) {
    auto& ioc = *core.iocs[index];
    core.work.push_back(asio::make_work_guard(ioc));
    core.io_threads.emplace_back([&ioc, &load = core.load, index] {
      load.thread_started(index);
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
  asio::post(*core.iocs.front(), [&core] { core.load.start(core.io_threads); });
}

std::uint16_t Server::port() const { return impl_->core.bound_port; }

void Server::close_connections_after_each_answer() { impl_->core.keep_alive_allowed = false; }

void Server::stop_accepting() {
  auto& core = impl_->core;
  core.close_listener();
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
  // Parked requests are dropped (their sessions with them); running handlers finish, and their
  // answers find the connection closing and are dropped.
  core.scheduler.stop();
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
  return impl_->core.scheduler.workers_responsive(timeout);
}

}  // namespace rr::http
