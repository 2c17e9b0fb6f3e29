// Thin wrappers over sd_notify(3); failures to notify are not fatal to the daemon.
#include "common/daemon/systemd_notify.hpp"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <string>

namespace rr::daemon {

namespace {

void send(const std::string& message) {
  // unset_environment=0: the variables must survive for the next notification.
  sd_notify(0, message.c_str());
}

}  // namespace

void notify_ready() { send("READY=1"); }

void notify_stopping() { send("STOPPING=1"); }

void notify_watchdog() {
  if (watchdog_interval()) send("WATCHDOG=1");
}

void notify_status(std::string_view text) {
  std::string message = "STATUS=";
  // The protocol is newline-separated: a newline in the text would start a bogus assignment.
  for (char c : text) message += (c == '\n' || c == '\r') ? ' ' : c;
  send(message);
}

std::optional<std::chrono::microseconds> watchdog_interval() {
  std::uint64_t usec = 0;
  // Checks WATCHDOG_USEC and, when set, that WATCHDOG_PID names this process.
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) return std::chrono::microseconds(usec);
  return std::nullopt;
}

}  // namespace rr::daemon
