// How much of a core a thread wanted: the CPU it ran plus the time it waited, runnable, for a
// core, from the kernel's per-thread schedstat (/proc/self/task/TID/schedstat). The CPU clock
// alone reads a busy thread as half busy when other work takes half the core; the balance asks
// whether the thread has more work than it gets through, which the wait answers too.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>

namespace rr::http {

struct ThreadDemand {
  double ran_seconds = 0;     // on a core
  double waited_seconds = 0;  // runnable, on a run queue
};

// "<ns on a core> <ns on a run queue> <timeslices>", as the kernel writes it; nothing for anything else.
std::optional<ThreadDemand> parse_schedstat(std::string_view text);

// The thread `tid` of this process, or nothing where the kernel keeps no schedstat (or no /proc).
std::optional<ThreadDemand> read_thread_demand(pid_t tid);

}  // namespace rr::http
