// Graceful stop for every long-running process (the daemons and the API): the first SIGTERM/SIGINT
// asks the process to finish what it is doing and return, a second one exits at once; sleeps end
// the moment a stop is requested.
#pragma once

#include <chrono>
#include <string_view>

namespace rr::daemon {

// The logfmt line (without a newline) a second signal writes to stderr before exiting with
// status 1; the handler appends " signal=<number>". Each process keeps the line its operators know.
inline constexpr std::string_view kDaemonSecondSignalLine = "level=error msg=\"second stop signal, exiting at once\"";

// Installs the SIGTERM/SIGINT handlers (idempotent). With a positive `shutdown_timeout`, a process
// still running that long after the first signal exits with status 1 (a hung pass must not keep
// systemd or foreman waiting forever). `second_signal_line` is cut to 200 bytes.
void install_stop_handlers(std::chrono::milliseconds shutdown_timeout = std::chrono::milliseconds{0},
                           std::string_view second_signal_line = kDaemonSecondSignalLine);

bool stop_requested();
// The signal that requested the stop (SIGTERM or SIGINT); 0 while no signal has (no stop yet, or
// a stop from request_stop()).
int stop_signal_number();
// For a process whose work runs on threads of its own (the API): block_stop_signals() before
// starting them (they inherit the block, so no handler interrupts a worker's system call), then
// wait_for_stop() in the thread that started them unblocks SIGTERM/SIGINT there and returns once a
// stop is requested; a second signal is then handled in that thread too.
void block_stop_signals();
void wait_for_stop();
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
