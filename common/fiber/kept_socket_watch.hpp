// A socket someone else owns (a pooled connection's libpq socket) that request fibers wait on call
// after call. A fiber::SocketWatch per wait registers the socket with the I/O thread's
// reactor and removes it again: three epoll_ctl and an ioctl for every SQL call, two calls per new
// key. This keeps the registration from one call to the next while the socket and the I/O thread
// stay the same.
//
// The registration is a descriptor of its own, a dup of the socket. libpq may close its socket
// (a lost connection) and the number be given to another socket at once; a registration by
// number would then be removed from, or wait on, that other socket. The dup holds on to the same
// socket until the registration goes, and closing it deregisters exactly that socket.
//
// One registration at a time: a wait on another I/O thread, or on a socket that is not the one
// registered (another number, or another connection behind the same number: SocketIdentity),
// drops the old registration first. So a socket never sits in two threads' reactors, where every
// answer would also wake the thread not waiting for it. The registration goes when its owner
// is destroyed, or when its I/O thread's io_context shuts down, whichever is first.
//
// Asio-free, as fiber.hpp is: the database code uses it without taking on Asio.
#pragma once

#include <chrono>
#include <memory>

namespace rr::fiber {

// Which connection a socket number belongs to now: the number alone may be reused by the next.
struct SocketIdentity {
  int socket = -1;
  const void* owner = nullptr;  // libpq's PGconn, say
  long generation = 0;          // and its server process id: a reconnect gives another
  bool operator==(const SocketIdentity&) const = default;
};

class KeptSocketWatch {
 public:
  KeptSocketWatch();
  ~KeptSocketWatch();  // drops the registration (its dup is closed)
  KeptSocketWatch(const KeptSocketWatch&) = delete;
  KeptSocketWatch& operator=(const KeptSocketWatch&) = delete;

  // Suspends the calling fiber (only on one) until the socket is readable or writable, or until
  // `deadline` (false then; time_point::max() arms no timer). Throws boost::system::system_error
  // when the socket cannot be watched.
  bool wait_readable(const SocketIdentity& socket,
                     std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  bool wait_writable(const SocketIdentity& socket,
                     std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

  // How many registrations this watch has made: for tests, which prove by it that a second call
  // on the same thread registers nothing.
  long registrations_made() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace rr::fiber
