// Kept socket registrations: one dup of the watched socket, registered with the reactor of the I/O
// thread that last waited on it, dropped by that io_context's ContextShutdownWatch when it shuts
// down (before its reactor goes; a pooled connection may well outlive the I/O threads).
#include "common/fiber/kept_socket_watch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <mutex>

#include "common/fiber/context_shutdown_watch.hpp"
#include "common/fiber/descriptor_wait.hpp"
#include "common/fiber/fiber_context.hpp"

namespace rr::fiber {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

struct KeptSocketWatch::State {
  std::mutex mutex;
  SocketIdentity identity;
  asio::execution_context* context = nullptr;  // whose reactor holds `descriptor`
  std::unique_ptr<asio::posix::stream_descriptor> descriptor;
  long registrations_made = 0;

  // With `mutex` held. Closing the dup deregisters it from its reactor, from whichever thread:
  // nothing waits on it now (its owner is not in a call), and Asio's reactor takes its own locks.
  void release_locked() {
    descriptor.reset();
    context = nullptr;
    identity = {};
  }

  // The io_context `shutting_down` is going away (ContextShutdownWatch): its registration goes.
  void drop(asio::execution_context* shutting_down) {
    std::lock_guard lock(mutex);
    if (context == shutting_down) release_locked();
  }
};

namespace {

[[noreturn]] void throw_errno(const char* what) {
  throw boost::system::system_error(error_code(errno, boost::system::system_category()), what);
}

bool wait_for(const std::shared_ptr<KeptSocketWatch::State>& state, const SocketIdentity& socket,
              asio::posix::descriptor_base::wait_type type, std::chrono::steady_clock::time_point deadline) {
  Context* self = current();
  if (self == nullptr) throw std::logic_error("KeptSocketWatch waits on a request fiber only");
  auto executor = self->yield.get_executor();
  auto& context = asio::query(executor, asio::execution::context);
  asio::posix::stream_descriptor* descriptor = nullptr;
  {
    std::lock_guard lock(state->mutex);
    if (state->descriptor && (state->identity != socket || state->context != &context)) state->release_locked();
    if (!state->descriptor) {
      int own = ::fcntl(socket.socket, F_DUPFD_CLOEXEC, 0);
      if (own < 0) throw_errno("dup of a watched socket");
      try {
        state->descriptor = std::make_unique<asio::posix::stream_descriptor>(executor, own);
      } catch (...) {
        ::close(own);
        throw;
      }
      // The descriptor's service exists by now, so this one is newer and shuts down first.
      asio::use_service<ContextShutdownWatch<KeptSocketWatch::State>>(context).watch(state);
      state->identity = socket;
      state->context = &context;
      ++state->registrations_made;
    }
    descriptor = state->descriptor.get();
  }
  // The mutex is not held across the suspension. Only this fiber (the socket's owner is in a
  // call) or the io_context's own shutdown can drop the registration meanwhile.
  error_code ec;
  if (!wait_until_ready(*descriptor, type, deadline, ec)) return false;
  if (ec) throw boost::system::system_error(ec, "waiting on a watched socket");
  return true;
}

}  // namespace

KeptSocketWatch::KeptSocketWatch() : state_(std::make_shared<State>()) {}

KeptSocketWatch::~KeptSocketWatch() {
  std::lock_guard lock(state_->mutex);
  state_->release_locked();
}

bool KeptSocketWatch::wait_readable(const SocketIdentity& socket, std::chrono::steady_clock::time_point deadline) {
  return wait_for(state_, socket, asio::posix::descriptor_base::wait_read, deadline);
}

bool KeptSocketWatch::wait_writable(const SocketIdentity& socket, std::chrono::steady_clock::time_point deadline) {
  return wait_for(state_, socket, asio::posix::descriptor_base::wait_write, deadline);
}

long KeptSocketWatch::registrations_made() const {
  std::lock_guard lock(state_->mutex);
  return state_->registrations_made;
}

}  // namespace rr::fiber
