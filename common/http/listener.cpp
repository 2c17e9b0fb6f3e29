// The server's listening socket: binding, the accept loop with the connection cap, and closing it
// for a graceful stop. Each accepted connection goes to the I/O thread the balance places it on.
#include <boost/asio/post.hpp>
#include <string>
#include <system_error>

#include "common/base/log.hpp"
#include "common/http/server_core.hpp"

namespace rr::http::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

void ServerCore::listen() {
  error_code ec;
  auto address = asio::ip::make_address(options.address, ec);
  if (ec) {
    throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                            "invalid listen address \"" + options.address + "\"");
  }
  tcp::endpoint endpoint(address, options.port);
  auto fail = [&](const char* step) {
    throw std::system_error(ec.value(), std::generic_category(),
                            std::string(step) + " " + options.address + ":" + std::to_string(options.port));
  };
  acceptor.open(endpoint.protocol(), ec);
  if (ec) fail("cannot open a socket for");
  // A restarted server must not wait out TIME_WAIT connections of its predecessor.
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) fail("cannot set SO_REUSEADDR on");
  acceptor.bind(endpoint, ec);
  if (ec) fail("cannot bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("cannot listen on");
  bound_port = acceptor.local_endpoint().port();
  protocol = endpoint.protocol();
}

void ServerCore::do_accept() {
  // A connection lives on one io_context at a time, which one thread runs: its handlers never run
  // concurrently, so it needs no strand (whose every hop costs a lock and a reference count).
  std::size_t thread = balance.placement();
  acceptor.async_accept(iocs[thread]->get_executor(), [this, thread](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      // Out of file descriptors and the like: pause instead of spinning on the error.
      log::warn("accept failed", {{"error", ec.message()}});
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](error_code wait_ec) {
        if (!wait_ec && acceptor.is_open()) do_accept();
      });
      return;
    }
    if (!accepting) {
      error_code ignored;
      socket.close(ignored);
      return;
    }
    auto admission = connections.admit();
    if (admission.evicted) make_room(*admission.evicted);
    if (!admission.admitted) {
      error_code ignored;
      socket.close(ignored);
    } else {
      // Answers go out as they are written: with Nagle's algorithm the second of two pipelined
      // answers would wait for the client's (delayed) acknowledgement of the first.
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      balance.placed(thread);
      serve(std::move(socket), admission.id, thread);
    }
    do_accept();
  });
}

void ServerCore::close_listener() {
  accepting = false;
  asio::post(acceptor.get_executor(), [this] {
    error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
  });
}

}  // namespace rr::http::detail
