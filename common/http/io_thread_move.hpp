// Moving a connected socket to another I/O thread (IoThreadBalance's decision): its descriptor
// leaves one io_context's reactor and joins another's. The connection does it between two
// requests, when nothing of its own is pending on the socket.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <optional>

namespace rr::http {

// The same connection as a socket of `target`. Nullopt when it failed: `socket` still open is
// still usable where it was; closed, the connection is lost (logged).
std::optional<boost::asio::ip::tcp::socket> move_socket(boost::asio::ip::tcp::socket& socket,
                                                        boost::asio::io_context& target,
                                                        const boost::asio::ip::tcp& protocol);

}  // namespace rr::http
