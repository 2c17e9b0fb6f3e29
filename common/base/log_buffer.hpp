// The log's output buffer: callers append whole lines and never wait for the output; a thread of
// its own writes them out, a batch per write(2), when a batch is big, when its oldest line has
// waited `flush_interval`, at once for urgent lines, and at flush(). A slow reader of standard
// output (a full pipe) costs the callers nothing: past `max_pending_bytes` lines are dropped,
// counted, and the count is written as a line of its own when the output drains.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace rr::log {

struct BufferOptions {
  std::size_t flush_bytes = 64 * 1024;              // a batch this big is written at once
  std::chrono::milliseconds flush_interval{50};     // no line waits longer than this
  std::size_t max_pending_bytes = 4 * 1024 * 1024;  // beyond it, lines are dropped (and counted)
};

class LineBuffer {
 public:
  // The line written after lines were dropped, given how many (it carries its own newline).
  using DropNotice = std::function<std::string(std::uint64_t dropped)>;

  LineBuffer(int fd, BufferOptions options, DropNotice drop_notice);
  // Writes what is pending (for at most a second) and stops the thread. An output that takes
  // nothing for that second leaves the thread blocked in write(2), detached, still using this
  // object: destroy a buffer only once its output is read or closed. The process's own buffer
  // (log.cpp) is never destroyed, for that reason among others.
  ~LineBuffer();
  LineBuffer(const LineBuffer&) = delete;
  LineBuffer& operator=(const LineBuffer&) = delete;

  // Queues `line` (with its newline) and returns without waiting for the output; `urgent` wakes
  // the writer at once instead of at the interval. Once stopped (or in a child after fork) the
  // line is written before returning. False when the line was dropped.
  bool append(std::string_view line, bool urgent);
  // Waits until every line appended before the call is written, at most `timeout`; false when the
  // output did not take them in time (they stay queued).
  bool flush(std::chrono::milliseconds timeout);
  // flush(timeout), then stops the thread: later lines are written synchronously. For exit.
  void stop(std::chrono::milliseconds timeout);
  // Writes to `fd` from now on, after what is pending went to the old one.
  void set_fd(int fd);
  // Lines dropped since the start because the output was too slow.
  std::uint64_t dropped() const;

  // For pthread_atfork, registered by the owner of a buffer that lives until exit: a child must not
  // inherit the lock held by a thread it does not have, nor write its parent's pending lines. The
  // child writes its own lines synchronously (it has no writer thread).
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  void run();
  // Everything pending, oldest first, or nothing once stopped. Called with `lock` held.
  void write_out(std::unique_lock<std::mutex>& lock);
  void write_all(std::string_view bytes);

  const BufferOptions options_;
  const DropNotice drop_notice_;
  mutable std::mutex mutex_;
  std::condition_variable wake_writer_;
  std::condition_variable written_;
  std::string pending_;                           // appended, not yet taken by the writer
  std::chrono::steady_clock::time_point oldest_;  // when pending_ stopped being empty
  std::uint64_t appended_bytes_ = 0;              // totals, for flush()
  std::uint64_t written_bytes_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t dropped_unreported_ = 0;
  bool urgent_ = false;
  bool flush_requested_ = false;
  bool stopping_ = false;
  bool synchronous_ = false;   // no writer thread: stopped, or a child after fork
  bool forked_child_ = false;  // write_mutex_ may be held by a thread the child does not have
  int fd_;
  std::mutex write_mutex_;  // one writer of fd_ at a time: the thread, or synchronous callers
  std::thread thread_;
};

}  // namespace rr::log
