// A plain loopback TCP connection for tests that send bytes no well-behaved HTTP client would
// (smuggling shapes, broken framing) and read exactly what the server writes back.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace rr::test {

class RawConnection {
 public:
  // To 127.0.0.1:port, from `source_address` (any loopback address, such as 127.0.0.2, to be a
  // client other than 127.0.0.1) or from 127.0.0.1 when empty.
  explicit RawConnection(std::uint16_t port, const std::string& source_address = "");
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  void send(std::string_view data);
  // Nagle's algorithm off: each send leaves in a segment of its own, not held for the peer's ACK.
  void send_each_write_at_once();
  // Each byte in a segment of its own, `pause` apart: the server then reads and parses every
  // prefix of `data` on its own.
  void send_one_byte_at_a_time(std::string_view data, std::chrono::milliseconds pause);
  // Half-closes: the server reads end-of-stream after what was sent, and may still answer.
  void shut_down_sending();

  // One response: its head and a body of its Content-Length; "" when the peer closed or the time
  // ran out first.
  std::string read_response(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  // Only a response's head (through the blank line): for answers to HEAD, whose Content-Length
  // describes a body that is never sent.
  std::string read_head(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  // True when the server closes the connection (EOF or reset) before the timeout; whatever it
  // wrote before closing stays readable through unread().
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  // Bytes received and not yet returned by read_response or read_head.
  const std::string& unread() const { return buffer_; }

 private:
  bool fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// The status code of a response's first line ("HTTP/1.1 400 Bad Request" gives 400), 0 if none.
int status_of(const std::string& response);
// The value of a header in a response's head (case-insensitive name), "" when absent.
std::string header_of(const std::string& response, std::string_view name);
// The body after the head ("" when none).
std::string body_of(const std::string& response);

}  // namespace rr::test
