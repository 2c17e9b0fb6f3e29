// The client's keeping of connections and its send(): a request takes a kept connection of its
// group (blocking callers, or the calling fiber's I/O thread) or opens a fresh one, and gives it
// back when the answer allows. Running an exchange is client_session.cpp's, the exchange itself
// client_exchange.cpp's.
#include "common/http/client.hpp"

#include <algorithm>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>
#include <map>
#include <mutex>

#include "common/fiber/context_shutdown_watch.hpp"
#include "common/fiber/fiber.hpp"
#include "common/fiber/fiber_context.hpp"
#include "common/http/client_session.hpp"
#include "common/http/message.hpp"

namespace rr::http {

namespace asio = boost::asio;

// Idle connections by group: the blocking callers' (key null, each with its own io_context) and
// each fiber I/O thread's (key its io_context), so a connection is only reused where its socket
// lives.
struct Client::Pool {
  std::mutex mutex;
  std::map<asio::execution_context*, std::vector<std::unique_ptr<Session>>> idle;

  // The io_context `home` is going away: its sockets must go first (fiber::ContextShutdownWatch
  // calls this; a Client may well outlive the I/O threads that used it).
  void drop(asio::execution_context* home) {
    std::vector<std::unique_ptr<Session>> dropped;
    std::lock_guard lock(mutex);
    auto it = idle.find(home);
    if (it == idle.end()) return;
    dropped = std::move(it->second);
    idle.erase(it);
  }
};

namespace {

// Sending again is harmless when the method says so or an Idempotency-Key lets the server dedupe.
bool safe_to_resend(const ClientRequest& request) {
  if (request.method == "GET" || request.method == "HEAD" || request.method == "PUT" || request.method == "DELETE") {
    return true;
  }
  return find_header(request.headers, "Idempotency-Key").has_value();
}

}  // namespace

std::string ClientResponse::header(std::string_view name) const {
  return std::string(find_header(headers, name).value_or(""));
}

Client::Client(std::size_t max_idle, std::chrono::milliseconds idle_limit)
    : max_idle_(max_idle), idle_limit_(idle_limit), pool_(std::make_shared<Pool>()) {}

Client::~Client() = default;

std::unique_ptr<Client::Session> Client::take_idle(const std::string& origin, asio::execution_context* home) {
  std::vector<std::unique_ptr<Session>> expired;  // closed after the lock is released
  std::lock_guard lock(pool_->mutex);
  auto& idle = pool_->idle[home];
  auto now = std::chrono::steady_clock::now();
  // Newest first: the one least likely to have been closed by the server meanwhile.
  for (auto it = idle.rbegin(); it != idle.rend(); ++it) {
    if ((*it)->origin == origin && now - (*it)->idle_since < idle_limit_) {
      auto session = std::move(*it);
      idle.erase(std::next(it).base());
      return session;
    }
  }
  for (auto& session : idle) {
    if (now - session->idle_since >= idle_limit_) expired.push_back(std::move(session));
  }
  std::erase(idle, nullptr);
  return nullptr;
}

void Client::give_back(std::unique_ptr<Session> session) {
  session->idle_since = std::chrono::steady_clock::now();
  std::unique_ptr<Session> evicted;
  std::lock_guard lock(pool_->mutex);
  auto& idle = pool_->idle[session->home];
  if (idle.size() >= max_idle_) {
    evicted = std::move(idle.front());
    idle.erase(idle.begin());
  }
  idle.push_back(std::move(session));
}

std::size_t Client::idle_connections() const {
  std::lock_guard lock(pool_->mutex);
  std::size_t count = 0;
  for (const auto& [home, sessions] : pool_->idle) count += sessions.size();
  return count;
}

namespace {

// A caller sends to the same URL call after call (the provider's charges endpoint): each thread
// remembers the last one it parsed. Shared, so a fiber suspended with it keeps it whatever the
// thread parses meanwhile.
std::shared_ptr<const detail::Url> parsed_url(const std::string& text) {
  thread_local std::string last_text;
  thread_local std::shared_ptr<const detail::Url> last;
  if (last && text == last_text) return last;
  auto parsed = detail::parse_url(text);
  if (!parsed) return nullptr;
  last = std::make_shared<const detail::Url>(std::move(*parsed));
  last_text = text;
  return last;
}

}  // namespace

ClientResponse Client::send(const ClientRequest& input) {
  auto url = parsed_url(input.url);
  if (!url) throw TransportError("invalid URL \"" + input.url + "\"", false);
  bool pooling = max_idle_ > 0;
  auto request = detail::build_request(input, *url, pooling);
  std::string what = input.method + " " + url->origin + url->target.substr(0, url->target.find('?'));
  auto deadline = std::chrono::steady_clock::now() + input.timeout;
  auto remaining = [&] {
    // Rounded up: a 300 ms timeout must not give up at 299 ms (duration_cast truncates).
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };

  // On a fiber the connection lives on its I/O thread. Untracked: a kept connection must not
  // count as work that keeps that io_context's run() from returning.
  asio::any_io_executor fiber_executor;
  asio::execution_context* home = nullptr;
  if (fiber::active()) {
    fiber_executor = asio::prefer(fiber::current()->yield.get_executor(), asio::execution::outstanding_work.untracked);
    home = &asio::query(fiber_executor, asio::execution::context);
  }

  auto session = pooling ? take_idle(url->origin, home) : nullptr;
  if (session) {
    detail::ExchangeState state;
    try {
      auto response = session->run(*url, request, what, remaining(), state);
      if (state.reusable) give_back(std::move(session));
      return response;
    } catch (const TransportError& e) {
      // A kept connection the server had closed fails before any answer; then (only if sending
      // twice is harmless) a fresh connection gets the rest of the time.
      if (e.timed_out() || state.answered || !safe_to_resend(input)) throw;
    }
  }
  if (home) {
    session = std::make_unique<Session>(url->origin, url->tls, fiber_executor);
    if (pooling) asio::use_service<fiber::ContextShutdownWatch<Pool>>(*home).watch(pool_);
  } else {
    session = std::make_unique<Session>(url->origin, url->tls);
  }
  detail::ExchangeState state;
  auto response = session->run(*url, request, what, remaining(), state);
  if (pooling && state.reusable) give_back(std::move(session));
  return response;
}

ClientResponse send(const ClientRequest& request) {
  Client one_shot(0);
  return one_shot.send(request);
}

}  // namespace rr::http
