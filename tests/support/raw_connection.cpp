// Blocking socket calls with poll() deadlines: a test never hangs on a server that says nothing.
#include "support/raw_connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <stdexcept>
#include <thread>

namespace rr::test {
namespace {

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t content_length(const std::string& head) {
  auto value = header_of(head, "Content-Length");
  return value.empty() ? 0 : std::stoul(value);
}

}  // namespace

RawConnection::RawConnection(std::uint16_t port, const std::string& source_address) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (!source_address.empty()) {
    sockaddr_in source{};
    source.sin_family = AF_INET;
    if (::inet_pton(AF_INET, source_address.c_str(), &source.sin_addr) != 1 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot bind to " + source_address);
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd_);
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
  }
}

RawConnection::~RawConnection() { ::close(fd_); }

void RawConnection::send(std::string_view data) {
  while (!data.empty()) {
    auto n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void RawConnection::send_each_write_at_once() {
  int on = 1;
  if (::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0) throw std::runtime_error("TCP_NODELAY failed");
}

void RawConnection::send_one_byte_at_a_time(std::string_view data, std::chrono::milliseconds pause) {
  send_each_write_at_once();
  for (char byte : data) {
    send(std::string_view(&byte, 1));
    std::this_thread::sleep_for(pause);
  }
}

void RawConnection::shut_down_sending() {
  if (::shutdown(fd_, SHUT_WR) != 0) throw std::runtime_error("shutdown failed");
}

std::string RawConnection::read_response(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto head_end = buffer_.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      std::size_t total = head_end + 4 + content_length(buffer_.substr(0, head_end + 4));
      if (buffer_.size() >= total) {
        std::string response = buffer_.substr(0, total);
        buffer_.erase(0, total);
        return response;
      }
    }
    if (!fill(deadline)) return "";
  }
}

std::string RawConnection::read_head(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto head_end = buffer_.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      std::string head = buffer_.substr(0, head_end + 4);
      buffer_.erase(0, head_end + 4);
      return head;
    }
    if (!fill(deadline)) return "";
  }
}

bool RawConnection::closed_by_peer(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (fill(deadline)) {
  }
  return eof_;
}

bool RawConnection::fill(std::chrono::steady_clock::time_point deadline) {
  if (eof_) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char chunk[4096];
  auto n = ::recv(fd_, chunk, sizeof chunk, 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<std::size_t>(n));
  return true;
}

int status_of(const std::string& response) {
  if (!response.starts_with("HTTP/1.") || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

std::string header_of(const std::string& response, std::string_view name) {
  auto head_end = response.find("\r\n\r\n");
  auto head = head_end == std::string::npos ? response : response.substr(0, head_end + 2);
  auto lower = lowercase(head);
  auto at = lower.find("\r\n" + lowercase(name) + ":");
  if (at == std::string::npos) return "";
  auto start = at + 2 + name.size() + 1;
  auto end = head.find("\r\n", start);
  auto value = head.substr(start, end - start);
  auto first = value.find_first_not_of(" \t");
  auto last = value.find_last_not_of(" \t");
  return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

std::string body_of(const std::string& response) {
  auto head_end = response.find("\r\n\r\n");
  return head_end == std::string::npos ? "" : response.substr(head_end + 4);
}

}  // namespace rr::test
