// The blocking HTTP client: a private io_context per call, so one deadline can cancel every step
// (resolve, connect, TLS handshake, write, read) and a slow provider never outlives its timeout.
#include "common/http/client.hpp"

#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <cctype>
#include <optional>

#include "common/http/message.hpp"

namespace rr::http {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
namespace urls = boost::urls;

// Provider answers are small; a runaway body is a broken peer, not data to buffer.
constexpr std::uint64_t kMaxResponseBody = 8 * 1024 * 1024;

struct Url {
  bool tls = false;
  std::string host;         // without brackets
  std::string port;         // digits
  std::string host_header;  // host[:port] as the Host header wants it
  std::string target;       // path and query
  std::string origin;       // scheme://host:port, for error messages (no query: it may hold secrets)
};

// http:// or https:// URLs as Boost.URL parses them; nullopt for anything else, or for user
// information (a secret in a URL ends up in logs).
std::optional<Url> parse_url(std::string_view text) {
  auto parsed = urls::parse_uri(text);
  if (!parsed) return std::nullopt;
  Url url;
  if (parsed->scheme_id() == urls::scheme::https) {
    url.tls = true;
  } else if (parsed->scheme_id() != urls::scheme::http) {
    return std::nullopt;
  }
  if (parsed->has_userinfo()) return std::nullopt;
  if (parsed->host_type() == urls::host_type::ipv6) {
    url.host = parsed->host_ipv6_address().to_string();
  } else {
    url.host = parsed->encoded_host();
  }
  if (url.host.empty()) return std::nullopt;
  std::string_view path = parsed->encoded_path();
  // Boost.URL 1.81 ends a port at its last digit and reads the rest as a path ("h:80x" is port 80
  // and path "x"); after an authority a path starts with '/', so such a URL is malformed.
  if (!path.empty() && path.front() != '/') return std::nullopt;
  if (!parsed->has_port() || parsed->port().empty()) {
    url.port = url.tls ? "443" : "80";
  } else {
    std::string_view port = parsed->port();
    if (port.size() > 5) return std::nullopt;
    int number = std::stoi(std::string(port));
    if (number < 1 || number > 65535) return std::nullopt;
    url.port = std::to_string(number);
  }
  std::string bracketed = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  bool default_port = url.port == (url.tls ? "443" : "80");
  url.host_header = default_port ? bracketed : bracketed + ":" + url.port;
  url.origin = (url.tls ? "https://" : "http://") + bracketed + ":" + url.port;
  url.target = path.empty() ? "/" : std::string(path);
  if (parsed->has_query()) url.target += "?" + std::string(parsed->encoded_query());
  return url;
}

// Loaded once: the system trust store and the verification policy are the same for every call.
ssl::context& tls_context() {
  static ssl::context context = [] {
    ssl::context ctx(ssl::context::tls_client);
    ctx.set_default_verify_paths();
    ctx.set_verify_mode(ssl::verify_peer);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    return ctx;
  }();
  return context;
}

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// What an exchange learned about its connection, beside the response.
struct ExchangeState {
  std::string step;
  bool answered = false;  // some response bytes arrived: the request reached the server
  bool reusable = false;  // the response allows another request on this connection
};

template <typename Stream>
asio::awaitable<ClientResponse> round_trip(Stream& stream, const bhttp::request<bhttp::string_body>& request,
                                           ExchangeState& state) {
  auto& step = state.step;
  step = "write";
  co_await bhttp::async_write(stream, request, asio::use_awaitable);
  step = "read";
  beast::flat_buffer buffer;
  // Interim 1xx answers (100 Continue, 103 Early Hints) come before the final one and must be
  // skipped (RFC 9110 section 15.2): taking one for the answer would leave the real answer on a
  // kept connection, to be read as the answer to the next request sent on it.
  std::optional<bhttp::response_parser<bhttp::string_body>> parsed;
  for (int interim = 0;; ++interim) {
    parsed.emplace();
    auto& parser = *parsed;
    parser.body_limit(kMaxResponseBody);
    if (request.method() == bhttp::verb::head) parser.skip(true);
    error_code ec;
    co_await bhttp::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    state.answered = state.answered || parser.got_some();
    // Many TLS servers close without close_notify; for a body that ends at EOF that is its end.
    if (ec == ssl::error::stream_truncated && parser.got_some() && parser.need_eof()) {
      ec = {};
      parser.put_eof(ec);
    }
    if (ec) throw boost::system::system_error(ec);
    auto status = parser.get().result_int();
    if (status < 100 || status >= 200 || status == 101) break;
    if (interim >= 8) throw std::runtime_error("more interim (1xx) responses than any server sends");
  }
  auto& parser = *parsed;

  auto& message = parser.get();
  // Bytes past the response would be a broken peer; a body that ran to EOF used the connection up;
  // 101 hands the connection to another protocol.
  state.reusable = message.keep_alive() && !parser.need_eof() && buffer.size() == 0 && message.result_int() != 101;
  ClientResponse response;
  response.status = static_cast<int>(message.result_int());
  for (const auto& field : message) {
    response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  response.body = std::move(message.body());
  co_return response;
}

struct Connection {
  explicit Connection(asio::io_context& ioc, bool tls) : resolver(ioc), plain(ioc) {
    if (tls) secure.emplace(ioc, tls_context());
  }
  tcp::socket& socket() { return secure ? secure->next_layer() : plain; }
  void cancel() {
    resolver.cancel();
    error_code ignored;
    socket().close(ignored);
  }

  tcp::resolver resolver;
  tcp::socket plain;
  std::optional<ssl::stream<tcp::socket>> secure;
};

asio::awaitable<ClientResponse> exchange(Connection& connection, const Url& url,
                                         const bhttp::request<bhttp::string_body>& request, ExchangeState& state) {
  auto& step = state.step;
  step = "connect";
  if (is_ip_literal(url.host)) {
    // No resolver for an address: asio's resolver runs getaddrinfo on a thread of its own.
    tcp::endpoint endpoint(asio::ip::make_address(url.host), static_cast<unsigned short>(std::stoi(url.port)));
    co_await connection.socket().async_connect(endpoint, asio::use_awaitable);
  } else {
    step = "resolve";
    auto endpoints = co_await connection.resolver.async_resolve(url.host, url.port, asio::use_awaitable);
    step = "connect";
    co_await asio::async_connect(connection.socket(), endpoints, asio::use_awaitable);
  }
  error_code ignored;
  connection.socket().set_option(tcp::no_delay(true), ignored);
  if (!connection.secure) co_return co_await round_trip(connection.plain, request, state);

  step = "TLS handshake";
  auto& stream = *connection.secure;
  if (!is_ip_literal(url.host) && !SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str())) {
    throw boost::system::system_error(error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category()));
  }
  stream.set_verify_callback(ssl::host_name_verification(url.host));
  co_await stream.async_handshake(ssl::stream_base::client, asio::use_awaitable);
  co_return co_await round_trip(stream, request, state);
}

// A request on a connection kept from an earlier one: straight to the round trip.
asio::awaitable<ClientResponse> exchange_again(Connection& connection,
                                               const bhttp::request<bhttp::string_body>& request,
                                               ExchangeState& state) {
  if (connection.secure) co_return co_await round_trip(*connection.secure, request, state);
  co_return co_await round_trip(connection.plain, request, state);
}

bhttp::request<bhttp::string_body> build_request(const ClientRequest& input, const Url& url, bool keep_alive) {
  bhttp::request<bhttp::string_body> request;
  request.method_string(input.method);
  request.target(url.target);
  request.version(11);
  request.set(bhttp::field::host, url.host_header);
  request.set(bhttp::field::user_agent, "rocket-rides");
  for (const auto& [name, value] : input.headers) {
    // A line break would let a value (an idempotency key, say) smuggle in headers of its own.
    if (name.empty() || name.find_first_of("\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      throw TransportError("refusing to send header \"" + name + "\": invalid name or a line break in its value",
                           false);
    }
    request.insert(name, value);
  }
  request.body() = input.body;
  request.keep_alive(keep_alive);
  request.prepare_payload();
  return request;
}

}  // namespace

std::string ClientResponse::header(std::string_view name) const {
  return std::string(find_header(headers, name).value_or(""));
}

// One connection with the io_context it lives on, so it can outlast the call that opened it.
struct Client::Session {
  Session(std::string origin, bool tls) : origin(std::move(origin)), connection(ioc, tls) {}
  std::string origin;
  asio::io_context ioc;
  Connection connection;
  bool used = false;  // carried a request already: the server may have closed it since
  std::chrono::steady_clock::time_point idle_since;
};

namespace {

// Runs one request on `session` within `timeout`; every step is cancelled at the deadline.
ClientResponse run_exchange(Client::Session& session, const Url& url, const bhttp::request<bhttp::string_body>& request,
                            const std::string& what, std::chrono::milliseconds timeout, ExchangeState& state) {
  bool done = false;
  std::exception_ptr failure;
  ClientResponse response;
  session.ioc.restart();
  auto on_done = [&](std::exception_ptr error, ClientResponse result) {
    done = true;
    failure = error;
    response = std::move(result);
  };
  if (session.used) {
    asio::co_spawn(session.ioc, exchange_again(session.connection, request, state), on_done);
  } else {
    asio::co_spawn(session.ioc, exchange(session.connection, url, request, state), on_done);
  }
  session.used = true;
  session.ioc.run_for(timeout);
  if (!done) {
    // The deadline passed: abort whichever step is pending and let the coroutine unwind.
    session.connection.cancel();
    session.ioc.restart();
    session.ioc.run();
    state.reusable = false;
    throw TransportError(what + ": timed out after " + std::to_string(timeout.count()) + " ms during " + state.step,
                         true);
  }
  if (failure) {
    state.reusable = false;
    try {
      std::rethrow_exception(failure);
    } catch (const boost::system::system_error& e) {
      throw TransportError(what + ": " + state.step + ": " + e.code().message(), false);
    } catch (const std::exception& e) {
      throw TransportError(what + ": " + state.step + ": " + e.what(), false);
    }
  }
  return response;
}

// Sending again is harmless when the method says so or an Idempotency-Key lets the server dedupe.
bool safe_to_resend(const ClientRequest& request) {
  if (request.method == "GET" || request.method == "HEAD" || request.method == "PUT" || request.method == "DELETE") {
    return true;
  }
  return find_header(request.headers, "Idempotency-Key").has_value();
}

}  // namespace

Client::Client(std::size_t max_idle, std::chrono::milliseconds idle_limit)
    : max_idle_(max_idle), idle_limit_(idle_limit) {}

Client::~Client() = default;

std::unique_ptr<Client::Session> Client::take_idle(const std::string& origin) {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  // Newest first: the one least likely to have been closed by the server meanwhile.
  for (auto it = idle_.rbegin(); it != idle_.rend(); ++it) {
    if ((*it)->origin == origin && now - (*it)->idle_since < idle_limit_) {
      auto session = std::move(*it);
      idle_.erase(std::next(it).base());
      return session;
    }
  }
  std::erase_if(idle_, [&](const auto& session) { return now - session->idle_since >= idle_limit_; });
  return nullptr;
}

void Client::give_back(std::unique_ptr<Session> session) {
  session->idle_since = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (idle_.size() >= max_idle_) idle_.erase(idle_.begin());
  idle_.push_back(std::move(session));
}

std::size_t Client::idle_connections() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

ClientResponse Client::send(const ClientRequest& input) {
  auto url = parse_url(input.url);
  if (!url) throw TransportError("invalid URL \"" + input.url + "\"", false);
  bool pooling = max_idle_ > 0;
  auto request = build_request(input, *url, pooling);
  std::string what = input.method + " " + url->origin + url->target.substr(0, url->target.find('?'));
  auto deadline = std::chrono::steady_clock::now() + input.timeout;
  auto remaining = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };

  auto session = pooling ? take_idle(url->origin) : nullptr;
  if (session) {
    ExchangeState state;
    try {
      auto response = run_exchange(*session, *url, request, what, remaining(), state);
      if (state.reusable) give_back(std::move(session));
      return response;
    } catch (const TransportError& e) {
      // A kept connection the server had closed fails before any answer; then (only if sending
      // twice is harmless) a fresh connection gets the rest of the time.
      if (e.timed_out() || state.answered || !safe_to_resend(input)) throw;
    }
  }
  session = std::make_unique<Session>(url->origin, url->tls);
  ExchangeState state;
  auto response = run_exchange(*session, *url, request, what, remaining(), state);
  if (pooling && state.reusable) give_back(std::move(session));
  return response;
}

ClientResponse send(const ClientRequest& request) {
  Client one_shot(0);
  return one_shot.send(request);
}

}  // namespace rr::http
