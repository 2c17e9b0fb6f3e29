// The bare loopback test servers.
#include "support/counting_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string_view>

namespace rr::test {

rr::http::ClientRequest request_to(const std::string& url, const std::string& method,
                                   std::chrono::milliseconds timeout) {
  rr::http::ClientRequest request;
  request.method = method;
  request.url = url;
  request.timeout = timeout;
  if (method == "POST") request.body = "a=1";
  return request;
}

int listen_on_loopback(std::uint16_t& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot listen");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

CountingServer::CountingServer(int answers_per_connection) : answers_per_connection_(answers_per_connection) {
  listener_ = listen_on_loopback(port_);
  acceptor_ = std::thread([this] { accept_all(); });
}

CountingServer::~CountingServer() {
  ::shutdown(listener_, SHUT_RDWR);
  ::close(listener_);
  acceptor_.join();
  {
    std::lock_guard lock(mutex_);
    for (int fd : open_) ::shutdown(fd, SHUT_RDWR);  // ends the reads of connections still kept
  }
  for (auto& connection : connections_) connection.join();
}

void CountingServer::accept_all() {
  for (;;) {
    int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    ++accepted_;
    std::lock_guard lock(mutex_);
    open_.push_back(fd);
    connections_.emplace_back([this, fd] { serve(fd); });
  }
}

void CountingServer::serve(int fd) {
  std::string buffer;
  char chunk[4096];
  for (int answered = 0; answered < answers_per_connection_;) {
    auto end = buffer.find("\r\n\r\n");
    auto length_at = buffer.find("Content-Length: ");
    std::size_t body = end != std::string::npos && length_at != std::string::npos && length_at < end
                           ? std::stoul(buffer.substr(length_at + 16))
                           : 0;
    if (end == std::string::npos || buffer.size() < end + 4 + body) {
      auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      buffer.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    buffer.erase(0, end + 4 + body);
    ++requests_;
    ++answered;
    static constexpr std::string_view kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    ::send(fd, kOk.data(), kOk.size(), MSG_NOSIGNAL);
  }
  std::lock_guard lock(mutex_);
  std::erase(open_, fd);
  ::close(fd);
}

}  // namespace rr::test
