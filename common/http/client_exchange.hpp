// One HTTP/1.1 request and its response on a connection, as a C++20 coroutine on whichever
// executor the connection lives on: a blocking call's private io_context or a request fiber's
// I/O thread (client_session.hpp picks). Internal to http::Client.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/client.hpp"

namespace rr::http::detail {

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
std::optional<Url> parse_url(std::string_view text);

using OutgoingRequest = boost::beast::http::request<boost::beast::http::string_body>;

// Throws TransportError for a header that could smuggle in others.
OutgoingRequest build_request(const ClientRequest& input, const Url& url, bool keep_alive);

// What an exchange learned about its connection, beside the response.
struct ExchangeState {
  std::string step;
  bool answered = false;  // some response bytes arrived: the request reached the server
  bool reusable = false;  // the response allows another request on this connection
};

// A TCP (or TLS over TCP) connection and its resolver, on one executor.
struct Connection {
  Connection(const boost::asio::any_io_executor& executor, bool tls);
  boost::asio::ip::tcp::socket& socket() { return secure ? secure->next_layer() : plain; }
  // Aborts whichever step is pending (the deadline passed); the coroutine then unwinds.
  void cancel();

  boost::asio::ip::tcp::resolver resolver;
  boost::asio::ip::tcp::socket plain;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> secure;
};

// Connects (resolve, connect, TLS handshake) and runs one round trip.
boost::asio::awaitable<ClientResponse> exchange(Connection& connection, const Url& url, const OutgoingRequest& request,
                                                ExchangeState& state);

// A request on a plain connection kept from an earlier one, on the calling request fiber: one
// write, the answer read into one buffer and parsed from it, the fiber suspended on the socket in
// between; no coroutine and no Beast asynchronous operation. Throws boost::system::system_error
// (operation_aborted once Connection::cancel closed the socket) and std::exception.
ClientResponse round_trip_on_fiber(boost::asio::ip::tcp::socket& socket, const OutgoingRequest& request,
                                   ExchangeState& state);

// A request on a connection kept from an earlier one: straight to the round trip.
boost::asio::awaitable<ClientResponse> exchange_again(Connection& connection, const OutgoingRequest& request,
                                                      ExchangeState& state);

}  // namespace rr::http::detail
