// Graceful stop for daemons: the first SIGTERM/SIGINT asks the loop to finish its pass and return,
// a second one exits at once; sleeps end the moment a stop is requested.
#pragma once

#include <chrono>

namespace rr::daemon {

// Installs the SIGTERM/SIGINT handlers (idempotent). With a positive `shutdown_timeout`, a process
// still running that long after the first signal exits with status 1 (a hung pass must not keep
// systemd or foreman waiting forever).
void install_stop_handlers(std::chrono::milliseconds shutdown_timeout = std::chrono::milliseconds{0});

bool stop_requested();
// What the first signal does, callable from code and tests (async-signal-safe).
void request_stop();
// Forgets a requested stop; for tests that run several loops in one process.
void reset_stop();

// Sleeps for `duration`; returns true when it slept the whole time, false when a stop ended it
// (or had already been requested).
bool sleep_unless_stopped(std::chrono::milliseconds duration);

enum class WakeReason { readable, timeout, stopped };
// Waits until `fd` is readable, the timeout passes or a stop is requested, whichever is first;
// this is how a loop waits on a socket (LISTEN/NOTIFY) without missing a signal.
WakeReason wait_readable_unless_stopped(int fd, std::chrono::milliseconds timeout);

// A descriptor that becomes (and stays) readable once a stop is requested, for callers that poll
// several descriptors of their own.
int stop_fd();

}  // namespace rr::daemon
