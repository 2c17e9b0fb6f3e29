// The writer thread and its hand-over: callers hold the lock only to append to a string; the
// thread swaps the whole pending text out and writes it with the lock released.
#include "common/base/log_buffer.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

namespace rr::log {
namespace {

// After a burst the two strings keep their capacity; beyond this much, give it back.
constexpr std::size_t kKeptCapacityBatches = 4;

}  // namespace

LineBuffer::LineBuffer(int fd, BufferOptions options, DropNotice drop_notice)
    : options_(options), drop_notice_(std::move(drop_notice)), fd_(fd) {
  pending_.reserve(options_.flush_bytes);
  thread_ = std::thread([this] { run(); });
}

LineBuffer::~LineBuffer() { stop(std::chrono::seconds(1)); }

bool LineBuffer::append(std::string_view line, bool urgent) {
  std::unique_lock lock(mutex_);
  if (synchronous_) {
    lock.unlock();
    if (forked_child_) {
      write_all(line);
    } else {
      std::lock_guard write_lock(write_mutex_);
      write_all(line);
    }
    return true;
  }
  bool was_idle = pending_.empty() && dropped_unreported_ == 0;
  if (was_idle) oldest_ = std::chrono::steady_clock::now();
  if (pending_.size() + line.size() > options_.max_pending_bytes) {
    ++dropped_;
    ++dropped_unreported_;
    lock.unlock();
    if (was_idle) wake_writer_.notify_one();
    return false;
  }
  bool was_below = pending_.size() < options_.flush_bytes;
  pending_.append(line);
  appended_bytes_ += line.size();
  // Wake the writer only when its wait should change: it sleeps without a deadline while nothing
  // is pending, and otherwise until the interval unless the batch fills up or a line is urgent.
  bool wake = was_idle || urgent || (was_below && pending_.size() >= options_.flush_bytes);
  if (urgent) urgent_ = true;
  lock.unlock();
  if (wake) wake_writer_.notify_one();
  return true;
}

bool LineBuffer::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (synchronous_) return true;
  auto target = appended_bytes_;
  if (written_bytes_ >= target) return true;
  flush_requested_ = true;
  wake_writer_.notify_one();
  return written_.wait_for(lock, timeout, [&] { return written_bytes_ >= target || synchronous_; });
}

void LineBuffer::stop(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  stopping_ = true;
  wake_writer_.notify_one();
  // The thread writes what is left and switches the buffer to synchronous writes as it exits. An
  // output that takes nothing (a pipe nobody reads) must not hold up the exit: leave it then.
  if (written_.wait_until(lock, deadline, [&] { return synchronous_; })) {
    lock.unlock();
    thread_.join();
  } else {
    thread_.detach();
  }
}

void LineBuffer::set_fd(int fd) {
  flush(std::chrono::seconds(1));
  std::lock_guard write_lock(write_mutex_);
  fd_ = fd;
}

std::uint64_t LineBuffer::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void LineBuffer::before_fork() { mutex_.lock(); }

void LineBuffer::after_fork_in_parent() { mutex_.unlock(); }

void LineBuffer::after_fork_in_child() {
  // The parent writes its own pending lines; the child has no writer thread, so its std::thread
  // must never be joined or destroyed (that would act on a thread of the parent's): park it in
  // storage that is never destroyed.
  pending_.clear();
  dropped_unreported_ = 0;
  synchronous_ = true;
  forked_child_ = true;
  alignas(std::thread) static unsigned char parked[sizeof(std::thread)];
  if (thread_.joinable()) new (parked) std::thread(std::move(thread_));
  mutex_.unlock();
}

void LineBuffer::run() {
  std::string batch;
  batch.reserve(options_.flush_bytes);
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_writer_.wait(lock, [&] { return !pending_.empty() || dropped_unreported_ > 0 || stopping_; });
    if (pending_.empty() && dropped_unreported_ == 0) {
      // Stopping with nothing left: from now on callers write their lines themselves, after
      // everything this thread wrote.
      synchronous_ = true;
      written_.notify_all();
      return;
    }
    wake_writer_.wait_until(lock, oldest_ + options_.flush_interval, [&] {
      return urgent_ || flush_requested_ || stopping_ || pending_.size() >= options_.flush_bytes;
    });
    batch.swap(pending_);
    auto dropped = std::exchange(dropped_unreported_, 0);
    auto through = appended_bytes_;
    urgent_ = false;
    flush_requested_ = false;
    lock.unlock();
    {
      std::lock_guard write_lock(write_mutex_);
      write_all(batch);
      if (dropped > 0 && drop_notice_) write_all(drop_notice_(dropped));
    }
    batch.clear();
    if (batch.capacity() > kKeptCapacityBatches * options_.flush_bytes) {
      batch.shrink_to_fit();
      batch.reserve(options_.flush_bytes);
    }
    lock.lock();
    written_bytes_ = through;
    written_.notify_all();
  }
}

// Whole lines, whatever the output does: a short write goes on where it stopped, a non-blocking
// descriptor that is full is waited for. An output that fails loses this batch, not the process.
void LineBuffer::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    auto n = ::write(fd_, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd out{fd_, POLLOUT, 0};
      ::poll(&out, 1, 1000);
    } else {
      return;
    }
  }
}

}  // namespace rr::log
