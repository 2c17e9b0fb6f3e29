// The systemd notify protocol (Type=notify): READY, STOPPING, WATCHDOG and STATUS messages.
// Every call is a no-op when NOTIFY_SOCKET is unset (foreman, a terminal, tests).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace rr::daemon {

void notify_ready();
void notify_stopping();
// Sends WATCHDOG=1 only when the service manager asked for it (WATCHDOG_USEC set for this process).
void notify_watchdog();
void notify_status(std::string_view text);

// The watchdog period systemd expects pings within, if it set one.
std::optional<std::chrono::microseconds> watchdog_interval();

}  // namespace rr::daemon
