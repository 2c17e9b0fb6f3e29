// The exchange itself: Boost.Beast over a plain or TLS stream, one deadline's cancellation away
// from aborting any step (the caller's, through Connection::cancel).
#include "common/http/client_exchange.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <stdexcept>
#include <string>

#include "common/fiber/fiber_context.hpp"
#include "common/http/message.hpp"
#include "common/http/parse_buffered.hpp"

namespace rr::http::detail {
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

// Room for a whole answer in one read: from an empty buffer Beast reads 512 bytes at a time, and a
// charge object (2-4 KiB) took five reads, each with a pass through the reactor in between.
constexpr std::size_t kAnswerReadSize = 16 * 1024;
// What an answer may leave unparsed in the buffer: its head (Beast bounds that at 8 KiB) or a
// chunk's line or the trailer, which Boost 1.81's parser does not bound. The body goes into the
// parser's string as it arrives, so no well-formed answer comes near this.
constexpr std::size_t kMaxUnparsedAnswer = 1024 * 1024;

// Room for the next read: as much as the buffer holds already (so a long line is read in a few
// reads), at least kAnswerReadSize, never past kMaxUnparsedAnswer.
std::size_t read_room(const beast::flat_buffer& buffer) {
  if (buffer.size() >= kMaxUnparsedAnswer) {
    throw std::runtime_error("the answer's head, a chunk's line or its trailer runs past " +
                             std::to_string(kMaxUnparsedAnswer) + " bytes");
  }
  return std::min(std::max(kAnswerReadSize, buffer.size()), kMaxUnparsedAnswer - buffer.size());
}

using ResponseParser = bhttp::response_parser<bhttp::string_body>;

// Interim 1xx answers (100 Continue, 103 Early Hints) come before the final one and must be
// skipped (RFC 9110 section 15.2): taking one for the answer would leave the real answer on a
// kept connection, to be read as the answer to the next request sent on it. True for the final one.
bool is_final(const ResponseParser& parser, int interim) {
  auto status = parser.get().result_int();
  if (status < 100 || status >= 200 || status == 101) return true;
  if (interim >= 8) throw std::runtime_error("more interim (1xx) responses than any server sends");
  return false;
}

ResponseParser& fresh_parser(std::optional<ResponseParser>& parsed, const OutgoingRequest& request) {
  auto& parser = parsed.emplace();
  parser.body_limit(kMaxResponseBody);
  if (request.method() == bhttp::verb::head) parser.skip(true);
  return parser;
}

// A read of an answer's bytes that came back with `n` of them and `ec`: true when the answer ended
// there, at EOF (a body that runs to it); false when the bytes went into the buffer for the parser;
// a failure throws.
bool ended_at_eof(ResponseParser& parser, beast::flat_buffer& buffer, error_code ec, std::size_t n,
                  ExchangeState& state) {
  // Many TLS servers close without close_notify; for a body that ends at EOF that is its end.
  bool truncated_at_the_end = ec == ssl::error::stream_truncated && parser.got_some() && parser.need_eof();
  if (ec == asio::error::eof || truncated_at_the_end) {
    // Nothing at all: a kept connection the server had closed (Beast's reads say the same).
    if (!parser.got_some()) throw boost::system::system_error(bhttp::error::end_of_stream);
    // The end of a body that runs to EOF, or an answer cut short (put_eof says which).
    ec = {};
    parser.put_eof(ec);
    if (ec) throw boost::system::system_error(ec);
    return true;
  }
  if (ec) throw boost::system::system_error(ec);
  buffer.commit(n);
  state.answered = true;
  return false;
}

// The final answer, and whether the connection may carry another request.
ClientResponse answer_of(ResponseParser& parser, const beast::flat_buffer& buffer, ExchangeState& state) {
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
  return response;
}

template <typename Stream>
asio::awaitable<ClientResponse> round_trip(Stream& stream, const OutgoingRequest& request, ExchangeState& state) {
  auto& step = state.step;
  step = "write";
  co_await bhttp::async_write(stream, request, asio::use_awaitable);
  step = "read";
  beast::flat_buffer buffer;
  buffer.reserve(kAnswerReadSize);
  std::optional<ResponseParser> parsed;
  for (int interim = 0;; ++interim) {
    auto& parser = fresh_parser(parsed, request);
    // Read here rather than by Beast's http::async_read, which hands the parser the buffer it
    // answered need_more to again unchanged (a last chunk so fails an assertion in Boost 1.81;
    // parse_buffered.hpp).
    for (;;) {
      error_code ec;
      if (parse_buffered(buffer, parser, true, ec)) {
        if (ec) throw boost::system::system_error(ec);
        break;
      }
      std::size_t n = co_await stream.async_read_some(buffer.prepare(read_room(buffer)),
                                                      asio::redirect_error(asio::use_awaitable, ec));
      if (ended_at_eof(parser, buffer, ec, n, state)) break;
    }
    if (is_final(parser, interim)) break;
  }
  co_return answer_of(*parsed, buffer, state);
}

// The request as it goes on the wire, as Beast's serializer writes it: the start line, the fields
// in their order, the body.
std::string wire_of(const OutgoingRequest& request) {
  std::string wire;
  wire.reserve(256 + request.body().size());
  wire.append(request.method_string()).append(" ").append(request.target()).append(" HTTP/1.1\r\n");
  for (const auto& field : request) wire.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
  wire.append("\r\n").append(request.body());
  return wire;
}

// Suspends the calling fiber until the socket is ready; operation_aborted once the deadline's
// cancellation closed it.
void wait_on_fiber(tcp::socket& socket, tcp::socket::wait_type type) {
  error_code ec;
  fiber::suspended([&](auto& yield) { socket.async_wait(type, yield[ec]); });
  if (ec) throw boost::system::system_error(ec);
}

}  // namespace

ClientResponse round_trip_on_fiber(tcp::socket& socket, const OutgoingRequest& request, ExchangeState& state) {
  error_code ec;
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  if (ec) throw boost::system::system_error(ec);
  state.step = "write";
  std::string wire = wire_of(request);
  for (std::size_t sent = 0; sent < wire.size();) {
    sent += socket.write_some(asio::buffer(wire) + sent, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      wait_on_fiber(socket, tcp::socket::wait_write);
    } else if (ec) {
      throw boost::system::system_error(ec);
    }
  }
  state.step = "read";
  beast::flat_buffer buffer;
  buffer.reserve(kAnswerReadSize);
  std::optional<ResponseParser> parsed;
  for (int interim = 0;; ++interim) {
    auto& parser = fresh_parser(parsed, request);
    for (;;) {
      if (parse_buffered(buffer, parser, true, ec)) {
        if (ec) throw boost::system::system_error(ec);
        break;
      }
      std::size_t n = socket.read_some(buffer.prepare(read_room(buffer)), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        wait_on_fiber(socket, tcp::socket::wait_read);
        continue;
      }
      if (ended_at_eof(parser, buffer, ec, n, state)) break;
    }
    if (is_final(parser, interim)) break;
  }
  return answer_of(*parsed, buffer, state);
}

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

OutgoingRequest build_request(const ClientRequest& input, const Url& url, bool keep_alive) {
  OutgoingRequest request;
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

Connection::Connection(const asio::any_io_executor& executor, bool tls) : resolver(executor), plain(executor) {
  if (tls) secure.emplace(executor, tls_context());
}

void Connection::cancel() {
  resolver.cancel();
  error_code ignored;
  socket().close(ignored);
}

asio::awaitable<ClientResponse> exchange(Connection& connection, const Url& url, const OutgoingRequest& request,
                                         ExchangeState& state) {
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

asio::awaitable<ClientResponse> exchange_again(Connection& connection, const OutgoingRequest& request,
                                               ExchangeState& state) {
  if (connection.secure) co_return co_await round_trip(*connection.secure, request, state);
  co_return co_await round_trip(connection.plain, request, state);
}

}  // namespace rr::http::detail
