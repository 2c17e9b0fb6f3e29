// Signal handling through an eventfd: the handler only bumps an atomic and writes the eventfd,
// which stays readable, so every poll() in the process wakes and keeps waking until reset.
#include "common/daemon/stop_signal.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <system_error>

namespace rr::daemon {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signals{0};
std::atomic<unsigned> g_shutdown_seconds{0};
std::atomic<int> g_first_signal{0};
// The second signal's line, written once at install time before the handlers can read it.
constexpr std::size_t kMaxLine = 200;
char g_second_signal_line[kMaxLine + 1] = {};
std::atomic<std::size_t> g_second_signal_length{0};
int g_event_fd = -1;
std::once_flag g_event_fd_once;

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free &&
                  std::atomic<std::size_t>::is_always_lock_free,
              "signal handlers may only touch lock-free atomics");

void make_event_fd() {
  // Created before any handler is installed, so the handler never sees -1.
  g_event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (g_event_fd < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

int event_fd() {
  std::call_once(g_event_fd_once, make_event_fd);
  return g_event_fd;
}

void write_stderr(const char* text, std::size_t length) {
  // write() is async-signal-safe; a failed write here has nowhere better to be reported.
  [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, text, length);
}

void signal_stop() {
  int saved_errno = errno;
  g_stop.store(true);
  std::uint64_t one = 1;
  [[maybe_unused]] auto ignored = ::write(g_event_fd, &one, sizeof one);
  errno = saved_errno;
}

// " signal=15\n" into `out` without snprintf, which is not async-signal-safe; returns the length.
std::size_t format_signal_field(int signo, char* out) {
  static const char kKey[] = " signal=";
  std::size_t length = 0;
  for (const char* p = kKey; *p != '\0'; ++p) out[length++] = *p;
  char digits[12];
  std::size_t count = 0;
  unsigned value = signo < 0 ? 0u : static_cast<unsigned>(signo);
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  while (count > 0) out[length++] = digits[--count];
  out[length++] = '\n';
  return length;
}

void on_stop_signal(int signo) {
  if (g_signals.fetch_add(1) > 0) {
    write_stderr(g_second_signal_line, g_second_signal_length.load());
    char field[32];
    write_stderr(field, format_signal_field(signo, field));
    ::_exit(1);
  }
  g_first_signal.store(signo);
  if (unsigned seconds = g_shutdown_seconds.load(); seconds > 0) ::alarm(seconds);
  signal_stop();
}

void on_shutdown_timeout(int) {
  static const char kMessage[] = "level=error msg=\"graceful stop took longer than SHUTDOWN_TIMEOUT, exiting\"\n";
  write_stderr(kMessage, sizeof kMessage - 1);
  ::_exit(1);
}

void install(int signo, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  // Restart interrupted system calls: the handler only records the request; blocking calls in
  // libpq and hiredis must not fail half-way because of it.
  action.sa_flags = SA_RESTART;
  if (::sigaction(signo, &action, nullptr) != 0) throw std::system_error(errno, std::generic_category(), "sigaction");
}

}  // namespace

void install_stop_handlers(std::chrono::milliseconds shutdown_timeout, std::string_view second_signal_line) {
  event_fd();
  const std::size_t length = std::min(second_signal_line.size(), kMaxLine);
  g_second_signal_length.store(0);
  std::memcpy(g_second_signal_line, second_signal_line.data(), length);
  g_second_signal_length.store(length);
  if (shutdown_timeout.count() > 0) {
    // alarm() has whole seconds; round up so the operator's budget is never cut short.
    g_shutdown_seconds.store(static_cast<unsigned>((shutdown_timeout.count() + 999) / 1000));
    install(SIGALRM, on_shutdown_timeout);
  }
  install(SIGTERM, on_stop_signal);
  install(SIGINT, on_stop_signal);
}

bool stop_requested() { return g_stop.load(); }

int stop_signal_number() { return g_first_signal.load(); }

namespace {

void mask_stop_signals(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (int error = ::pthread_sigmask(how, &set, nullptr); error != 0) {
    throw std::system_error(error, std::generic_category(), "pthread_sigmask");
  }
}

}  // namespace

void block_stop_signals() { mask_stop_signals(SIG_BLOCK); }

void wait_for_stop() {
  // A signal that arrived while blocked is pending and runs its handler right here.
  mask_stop_signals(SIG_UNBLOCK);
  while (!stop_requested()) {
    pollfd fd{event_fd(), POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
  }
}

void request_stop() {
  event_fd();
  signal_stop();
}

void reset_stop() {
  std::uint64_t value = 0;
  while (::read(event_fd(), &value, sizeof value) > 0) {
  }
  g_signals.store(0);
  g_first_signal.store(0);
  g_stop.store(false);
}

int stop_fd() { return event_fd(); }

WakeReason wait_readable_unless_stopped(int fd, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  for (;;) {
    if (stop_requested()) return WakeReason::stopped;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds{0};
    pollfd fds[2] = {{event_fd(), POLLIN, 0}, {fd, POLLIN, 0}};
    const nfds_t count = fd >= 0 ? 2 : 1;
    int ready = ::poll(fds, count, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "poll");
    }
    if (fds[0].revents != 0 || stop_requested()) return WakeReason::stopped;
    // A hang-up or error on the socket counts as readable: the caller's next read reports it.
    if (count == 2 && fds[1].revents != 0) return WakeReason::readable;
    if (ready == 0 && clock::now() >= deadline) return WakeReason::timeout;
  }
}

bool sleep_unless_stopped(std::chrono::milliseconds duration) {
  return wait_readable_unless_stopped(-1, duration) == WakeReason::timeout;
}

}  // namespace rr::daemon
