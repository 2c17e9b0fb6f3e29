// AF_UNIX datagram receiver for sd_notify messages.
#include "support/notify_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "support/test_database.hpp"

namespace rr::test {

NotifySocket::NotifySocket() {
  path_ = "/tmp/rr-notify-" + random_suffix() + ".sock";
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind notify socket");
}

NotifySocket::~NotifySocket() {
  ::close(fd_);
  ::unlink(path_.c_str());
}

std::vector<std::string> NotifySocket::messages() {
  std::vector<std::string> out;
  char buf[4096];
  for (;;) {
    auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.emplace_back(buf, static_cast<std::size_t>(n));
    received_.push_back(out.back());
  }
  return out;
}

bool NotifySocket::wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (const auto& message : messages()) {
      if (message.find(needle) != std::string::npos) return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
}

}  // namespace rr::test
