// Re-registering a socket's descriptor with another io_context.
#include "common/http/io_thread_move.hpp"

#include <unistd.h>

#include "common/base/log.hpp"

namespace rr::http {

std::optional<boost::asio::ip::tcp::socket> move_socket(boost::asio::ip::tcp::socket& socket,
                                                        boost::asio::io_context& target,
                                                        const boost::asio::ip::tcp& protocol) {
  boost::system::error_code ec;
  int descriptor = socket.release(ec);
  if (ec) return std::nullopt;  // still ours, still open
  boost::asio::ip::tcp::socket moved(target);
  moved.assign(protocol, descriptor, ec);
  if (ec) {
    ::close(descriptor);
    log::warn("moving a connection to another I/O thread failed; closed it", {{"error", ec.message()}});
    return std::nullopt;
  }
  return moved;
}

}  // namespace rr::http
