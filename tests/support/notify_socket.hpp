// A datagram socket standing in for systemd's notify socket, to test READY/STOPPING/WATCHDOG.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace rr::test {

class NotifySocket {
 public:
  NotifySocket();
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  // The value for NOTIFY_SOCKET.
  const std::string& path() const { return path_; }
  // Every message received since the last call.
  std::vector<std::string> messages();
  // Waits until a message containing `needle` arrives (collecting what came before it).
  bool wait_for(const std::string& needle, std::chrono::milliseconds timeout);
  // Everything received so far, in order.
  const std::vector<std::string>& received() const { return received_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> received_;
};

}  // namespace rr::test
