// The daemon skeleton: stop signals, interruptible sleeps, the loop's backoff, idle waits and
// graceful stop, systemd notifications and the --once command line.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "support/notify_socket.hpp"

#include "common/base/log.hpp"
#include "common/cli/run_main.hpp"
#include "common/daemon/backoff.hpp"
#include "common/daemon/daemon_args.hpp"
#include "common/daemon/daemon_main.hpp"
#include "common/daemon/drain.hpp"
#include "common/daemon/loop_runner.hpp"
#include "common/daemon/stop_signal.hpp"
#include "common/daemon/systemd_notify.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using std::chrono::milliseconds;
namespace daemon_ns = rr::daemon;

namespace {

// Every case starts and ends with no stop requested, so cases cannot leak a stop into each other.
struct CleanStop {
  CleanStop() { daemon_ns::reset_stop(); }
  ~CleanStop() { daemon_ns::reset_stop(); }
};

milliseconds elapsed_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
}

// The shared notify socket, with NOTIFY_SOCKET pointing at it in this process while it lives.
class NotifySocket {
 public:
  NotifySocket() { ::setenv("NOTIFY_SOCKET", socket_.path().c_str(), 1); }
  ~NotifySocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
  }
  // Every message received since the last call.
  std::vector<std::string> messages() { return socket_.messages(); }

 private:
  rr::test::NotifySocket socket_;
};

// Redirects standard output to a file for the lifetime of the object, to read log lines back. The
// log is buffered (written by its own thread), so its lines are flushed at both ends.
class CapturedStdout {
 public:
  CapturedStdout() {
    path_ = "/tmp/rr-stdout-" + rr::test::random_suffix() + ".log";
    rr::log::flush();
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, STDOUT_FILENO);
    ::close(fd);
  }
  ~CapturedStdout() {
    restore();
    ::unlink(path_.c_str());
  }
  std::string text() {
    restore();
    std::string out;
    if (std::FILE* f = std::fopen(path_.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
      std::fclose(f);
    }
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    rr::log::flush();
    std::fflush(stdout);
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
    saved_ = -1;
  }
  std::string path_;
  int saved_ = -1;
};

daemon_ns::LoopOptions quick_options(std::string name) {
  daemon_ns::LoopOptions options;
  options.name = std::move(name);
  options.idle_sleep = 10ms;
  options.initial_backoff = 1ms;
  options.max_backoff = 8ms;
  return options;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(stop_signal, CleanStop)

BOOST_AUTO_TEST_CASE(a_requested_stop_is_seen_and_a_reset_forgets_it) {
  BOOST_TEST(!daemon_ns::stop_requested());
  daemon_ns::request_stop();
  BOOST_TEST(daemon_ns::stop_requested());
  BOOST_TEST(!daemon_ns::sleep_unless_stopped(5s));
  daemon_ns::reset_stop();
  BOOST_TEST(!daemon_ns::stop_requested());
  BOOST_TEST(daemon_ns::sleep_unless_stopped(1ms));
}

BOOST_AUTO_TEST_CASE(a_sleep_without_a_stop_lasts_its_whole_duration) {
  auto start = std::chrono::steady_clock::now();
  BOOST_TEST(daemon_ns::sleep_unless_stopped(100ms));
  BOOST_TEST(elapsed_since(start).count() >= 100);
}

BOOST_AUTO_TEST_CASE(a_stop_from_another_thread_ends_a_long_sleep_at_once) {
  auto start = std::chrono::steady_clock::now();
  std::thread stopper([] {
    std::this_thread::sleep_for(100ms);
    daemon_ns::request_stop();
  });
  bool slept_fully = daemon_ns::sleep_unless_stopped(30s);
  stopper.join();
  BOOST_TEST(!slept_fully);
  BOOST_TEST(elapsed_since(start).count() < 2000);
}

BOOST_AUTO_TEST_CASE(sigterm_requests_a_graceful_stop_without_killing_the_process) {
  daemon_ns::install_stop_handlers();
  std::raise(SIGTERM);
  BOOST_TEST(daemon_ns::stop_requested());
  BOOST_TEST(!daemon_ns::sleep_unless_stopped(5s));
}

BOOST_AUTO_TEST_CASE(sigint_requests_a_graceful_stop_too) {
  daemon_ns::install_stop_handlers();
  std::raise(SIGINT);
  BOOST_TEST(daemon_ns::stop_requested());
}

BOOST_AUTO_TEST_CASE(a_second_signal_exits_at_once_with_status_one) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    daemon_ns::install_stop_handlers();
    std::raise(SIGTERM);
    if (!daemon_ns::stop_requested()) ::_exit(3);
    std::raise(SIGTERM);
    ::_exit(0);  // reached only if the second signal did not exit
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 1);
}

BOOST_AUTO_TEST_CASE(the_second_signal_writes_the_processs_own_line_with_the_signal) {
  int pipe_fds[2];
  BOOST_REQUIRE(::pipe(pipe_fds) == 0);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    daemon_ns::install_stop_handlers(0ms, "level=warn msg=\"second signal: exiting now\"");
    std::raise(SIGTERM);
    if (daemon_ns::stop_signal_number() != SIGTERM) ::_exit(3);
    std::raise(SIGINT);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string written;
  char buffer[256];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    written.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 1);
  BOOST_TEST(written == "level=warn msg=\"second signal: exiting now\" signal=" + std::to_string(SIGINT) + "\n");
}

BOOST_AUTO_TEST_CASE(a_signal_that_came_while_blocked_ends_wait_for_stop_in_the_waiting_thread) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    daemon_ns::install_stop_handlers();
    daemon_ns::block_stop_signals();
    std::raise(SIGTERM);  // pending: no handler runs while blocked
    if (daemon_ns::stop_requested()) ::_exit(3);
    daemon_ns::wait_for_stop();
    ::_exit(daemon_ns::stop_signal_number() == SIGTERM ? 0 : 4);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
}

BOOST_AUTO_TEST_CASE(a_stop_requested_in_code_has_no_signal_number) {
  daemon_ns::request_stop();
  daemon_ns::wait_for_stop();  // returns at once
  BOOST_TEST(daemon_ns::stop_signal_number() == 0);
}

BOOST_AUTO_TEST_CASE(a_graceful_stop_that_overruns_the_shutdown_timeout_exits_with_status_one) {
  std::fflush(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    daemon_ns::install_stop_handlers(1ms);  // rounds up to one second
    std::raise(SIGTERM);
    for (int i = 0; i < 100; ++i) ::usleep(100'000);  // a pass that hangs for ten seconds
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 1);
  BOOST_TEST(elapsed_since(start).count() < 5000);
}

BOOST_AUTO_TEST_CASE(waiting_on_a_descriptor_reports_readable_timeout_or_stop) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  BOOST_TEST((daemon_ns::wait_readable_unless_stopped(fds[0], 20ms) == daemon_ns::WakeReason::timeout));
  BOOST_REQUIRE(::write(fds[1], "x", 1) == 1);
  BOOST_TEST((daemon_ns::wait_readable_unless_stopped(fds[0], 5s) == daemon_ns::WakeReason::readable));
  daemon_ns::request_stop();
  BOOST_TEST((daemon_ns::wait_readable_unless_stopped(fds[0], 5s) == daemon_ns::WakeReason::stopped));
  ::close(fds[0]);
  ::close(fds[1]);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(backoff)

BOOST_AUTO_TEST_CASE(the_ceiling_doubles_per_failure_up_to_the_cap) {
  daemon_ns::Backoff backoff(100ms, 1000ms, 42);
  BOOST_TEST(backoff.ceiling().count() == 0);
  std::vector<long> ceilings;
  for (int i = 0; i < 6; ++i) {
    auto delay = backoff.next();
    ceilings.push_back(backoff.ceiling().count());
    BOOST_TEST(delay.count() >= 0);
    BOOST_TEST(delay <= backoff.ceiling());
  }
  BOOST_TEST(ceilings == (std::vector<long>{100, 200, 400, 800, 1000, 1000}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(delays_are_jittered_rather_than_all_equal) {
  daemon_ns::Backoff backoff(1000ms, 1000ms, 7);
  long first = backoff.next().count();
  bool saw_other = false;
  for (int i = 0; i < 20 && !saw_other; ++i) saw_other = backoff.next().count() != first;
  BOOST_TEST(saw_other);
}

BOOST_AUTO_TEST_CASE(a_reset_starts_again_from_the_base) {
  daemon_ns::Backoff backoff(10ms, 10s, 1);
  for (int i = 0; i < 8; ++i) backoff.next();
  BOOST_TEST(backoff.ceiling().count() == 1280);
  backoff.reset();
  backoff.next();
  BOOST_TEST(backoff.ceiling().count() == 10);
  BOOST_TEST(backoff.failures() == 1);
}

BOOST_AUTO_TEST_CASE(a_very_long_outage_does_not_overflow) {
  daemon_ns::Backoff backoff(100ms, 30s, 3);
  for (int i = 0; i < 200; ++i) BOOST_TEST(backoff.next() <= 30s);
  BOOST_TEST(backoff.ceiling().count() == 30000);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(loop_runner, CleanStop)

BOOST_AUTO_TEST_CASE(a_failing_pass_backs_off_with_growing_failure_counts_and_stops_on_request) {
  auto options = quick_options("test-loop");
  std::vector<int> failure_counts;
  std::vector<milliseconds> delays;
  options.on_backoff = [&](milliseconds delay, int failures) {
    failure_counts.push_back(failures);
    delays.push_back(delay);
    if (failures == 5) daemon_ns::request_stop();
  };
  int calls = 0;
  auto stats = daemon_ns::run_loop(options, [&]() -> daemon_ns::PassOutcome {
    ++calls;
    throw std::runtime_error("boom");
  });
  BOOST_TEST(calls == 5);
  BOOST_TEST(stats.failed_passes == 5u);
  BOOST_TEST(stats.passes == 0u);
  BOOST_TEST(failure_counts == (std::vector<int>{1, 2, 3, 4, 5}), boost::test_tools::per_element());
  for (auto delay : delays) BOOST_TEST(delay <= options.max_backoff);
}

BOOST_AUTO_TEST_CASE(a_successful_pass_resets_the_backoff) {
  auto options = quick_options("test-loop");
  std::vector<int> failure_counts;
  options.on_backoff = [&](milliseconds, int failures) { failure_counts.push_back(failures); };
  int calls = 0;
  daemon_ns::run_loop(options, [&]() -> daemon_ns::PassOutcome {
    ++calls;
    if (calls == 3) return {true};
    if (calls == 5) {
      daemon_ns::request_stop();
      return {false};
    }
    throw std::runtime_error("boom");
  });
  // fail, fail, succeed, fail, stop: the failure after the success counts from one again.
  BOOST_TEST(failure_counts == (std::vector<int>{1, 2, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_failed_pass_is_logged_as_one_error_line_naming_the_loop) {
  auto options = quick_options("test-loop");
  options.on_backoff = [&](milliseconds, int) { daemon_ns::request_stop(); };
  CapturedStdout captured;
  daemon_ns::run_loop(options, []() -> daemon_ns::PassOutcome { throw std::runtime_error("redis went away"); });
  std::string text = captured.text();
  std::size_t error_lines = 0;
  std::string error_line;
  for (std::size_t pos = 0, end; pos < text.size(); pos = end + 1) {
    end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    if (line.find("level=error") != std::string::npos) {
      ++error_lines;
      error_line = line;
    }
  }
  BOOST_TEST(error_lines == 1u);
  BOOST_TEST(error_line.find("test-loop pass failed") != std::string::npos);
  BOOST_TEST(error_line.find("error=\"redis went away\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_loop_repeats_busy_passes_without_waiting_and_waits_after_an_idle_one) {
  auto options = quick_options("test-loop");
  options.idle_sleep = 60s;
  int calls = 0;
  std::vector<int> waited_after;
  options.wait_for_work = [&](milliseconds) {
    waited_after.push_back(calls);
    if (waited_after.size() == 2) daemon_ns::request_stop();
    return true;  // woken: run another pass at once
  };
  auto start = std::chrono::steady_clock::now();
  auto stats = daemon_ns::run_loop(options, [&]() -> daemon_ns::PassOutcome { return {++calls <= 3}; });
  // Passes 1-3 did work, 4 was idle (wait), 5 idle (wait, stop).
  BOOST_TEST(waited_after == (std::vector<int>{4, 5}), boost::test_tools::per_element());
  BOOST_TEST(stats.busy_passes == 3u);
  BOOST_TEST(stats.passes == 5u);
  BOOST_TEST(elapsed_since(start).count() < 5000);
}

BOOST_AUTO_TEST_CASE(without_a_wake_up_an_idle_loop_sleeps_idle_sleep_between_passes) {
  auto options = quick_options("test-loop");
  options.idle_sleep = 150ms;
  int calls = 0;
  auto start = std::chrono::steady_clock::now();
  daemon_ns::run_loop(options, [&]() -> daemon_ns::PassOutcome {
    if (++calls == 3) daemon_ns::request_stop();
    return {false};
  });
  BOOST_TEST(calls == 3);
  BOOST_TEST(elapsed_since(start).count() >= 300);
}

BOOST_AUTO_TEST_CASE(a_stop_during_a_pass_finishes_that_pass_and_returns) {
  auto options = quick_options("test-loop");
  bool finished = false;
  int calls = 0;
  auto stats = daemon_ns::run_loop(options, [&]() -> daemon_ns::PassOutcome {
    ++calls;
    daemon_ns::request_stop();
    finished = true;
    return {true};
  });
  BOOST_TEST(calls == 1);
  BOOST_TEST(finished);
  BOOST_TEST(stats.passes == 1u);
}

BOOST_AUTO_TEST_CASE(a_stop_during_a_long_backoff_returns_at_once) {
  auto options = quick_options("test-loop");
  options.initial_backoff = 60s;
  options.max_backoff = 60s;
  std::thread stopper([] {
    std::this_thread::sleep_for(200ms);
    daemon_ns::request_stop();
  });
  auto start = std::chrono::steady_clock::now();
  daemon_ns::run_loop(options, []() -> daemon_ns::PassOutcome { throw std::runtime_error("down"); });
  stopper.join();
  BOOST_TEST(elapsed_since(start).count() < 3000);
}

BOOST_AUTO_TEST_CASE(a_failing_wake_up_falls_back_to_sleeping_idle_sleep_and_is_tried_again) {
  auto options = quick_options("test-loop");
  options.idle_sleep = 100ms;
  int waits = 0;
  options.wait_for_work = [&](milliseconds) -> bool {
    ++waits;
    throw std::runtime_error("listen connection lost");
  };
  bool backed_off = false;
  options.on_backoff = [&](milliseconds, int) { backed_off = true; };
  int calls = 0;
  auto start = std::chrono::steady_clock::now();
  auto stats = daemon_ns::run_loop(options, [&]() -> daemon_ns::PassOutcome {
    if (++calls == 3) daemon_ns::request_stop();
    return {false};
  });
  BOOST_TEST(waits == 2);
  BOOST_TEST(stats.failed_waits == 2u);
  BOOST_TEST(stats.failed_passes == 0u);
  BOOST_TEST(!backed_off);
  BOOST_TEST(elapsed_since(start).count() >= 200);
}

BOOST_AUTO_TEST_CASE(systemd_hears_ready_after_the_first_pass_and_stopping_at_the_end) {
  NotifySocket notify;
  auto options = quick_options("test-loop");
  std::vector<std::string> seen_during_first_pass;
  int calls = 0;
  daemon_ns::run_loop(options, [&]() -> daemon_ns::PassOutcome {
    if (++calls == 1) seen_during_first_pass = notify.messages();
    if (calls == 2) daemon_ns::request_stop();
    return {true};
  });
  auto messages = notify.messages();
  BOOST_TEST(seen_during_first_pass.empty());
  BOOST_REQUIRE(messages.size() == 2u);
  BOOST_TEST(messages[0] == "READY=1");  // once, although two passes ran
  BOOST_TEST(messages[1] == "STOPPING=1");
}

BOOST_AUTO_TEST_CASE(the_watchdog_is_fed_only_when_systemd_asked_for_it) {
  NotifySocket notify;
  daemon_ns::notify_watchdog();
  BOOST_TEST(notify.messages().empty());
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  BOOST_TEST(daemon_ns::watchdog_interval().has_value());
  daemon_ns::notify_watchdog();
  auto messages = notify.messages();
  BOOST_REQUIRE(messages.size() == 1u);
  BOOST_TEST(messages[0] == "WATCHDOG=1");
}

BOOST_AUTO_TEST_CASE(a_status_line_cannot_smuggle_a_second_assignment) {
  NotifySocket notify;
  daemon_ns::notify_status("failing\nREADY=1");
  auto messages = notify.messages();
  BOOST_REQUIRE(messages.size() == 1u);
  BOOST_TEST(messages[0] == "STATUS=failing READY=1");
}

BOOST_AUTO_TEST_CASE(notifications_are_silent_no_ops_without_a_notify_socket) {
  ::unsetenv("NOTIFY_SOCKET");
  daemon_ns::notify_ready();
  daemon_ns::notify_status("x");
  BOOST_TEST(!daemon_ns::watchdog_interval().has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(daemon_args)

BOOST_AUTO_TEST_CASE(no_arguments_means_run_until_stopped) {
  const char* argv[] = {"daemon"};
  BOOST_TEST(!daemon_ns::parse_daemon_args(1, argv).once);
}

BOOST_AUTO_TEST_CASE(once_means_one_drain_then_exit) {
  const char* argv[] = {"daemon", "--once"};
  BOOST_TEST(daemon_ns::parse_daemon_args(2, argv).once);
}

BOOST_AUTO_TEST_CASE(an_unknown_argument_is_a_usage_error_naming_it) {
  const char* argv[] = {"daemon", "--twice"};
  try {
    daemon_ns::parse_daemon_args(2, argv);
    BOOST_FAIL("expected a UsageError");
  } catch (const rr::cli::UsageError& e) {
    BOOST_TEST(std::string(e.what()).find("--twice") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(daemon_skeleton, CleanStop)

// A worker that answers a scripted sequence of batch sizes (batch size 10) and records its calls.
class ScriptedWorker final : public daemon_ns::Worker {
 public:
  explicit ScriptedWorker(std::vector<int> batches) : batches_(std::move(batches)) {}
  daemon_ns::PassOutcome run_once() override {
    int size = calls < static_cast<int>(batches_.size()) ? batches_[static_cast<std::size_t>(calls)] : 0;
    ++calls;
    if (size < 0) throw std::runtime_error("pass failed");
    return {size > 0, size >= 10};
  }
  void announce_start() override { ++announced; }
  int calls = 0;
  int announced = 0;

 private:
  std::vector<int> batches_;
};

BOOST_AUTO_TEST_CASE(a_drain_repeats_full_batches_and_ends_at_the_first_short_one) {
  ScriptedWorker worker({10, 10, 3, 10});
  BOOST_TEST(daemon_ns::drain([&] { return worker.run_once(); }) == 3);
  BOOST_TEST(worker.calls == 3);
}

BOOST_AUTO_TEST_CASE(a_drain_stops_at_its_pass_limit_or_a_stop_request) {
  ScriptedWorker endless(std::vector<int>(100, 10));
  BOOST_TEST(daemon_ns::drain([&] { return endless.run_once(); }, 4) == 4);
  daemon_ns::request_stop();
  BOOST_TEST(daemon_ns::drain([&] { return endless.run_once(); }) == 0);
  BOOST_TEST(endless.calls == 4);
}

BOOST_AUTO_TEST_CASE(once_drains_without_the_loop_and_exits_zero) {
  ScriptedWorker worker({10, 10, 0});
  rr::config::LoopSettings loop{};
  loop.batch_size = 10;
  const int status = daemon_ns::run_worker({.once = true}, "test-loop", loop, worker);
  BOOST_TEST(status == 0);
  BOOST_TEST(worker.calls == 3);
  BOOST_TEST(worker.announced == 0);  // loop mode only
}

BOOST_AUTO_TEST_CASE(a_failing_pass_under_once_propagates_instead_of_backing_off) {
  ScriptedWorker worker({10, -1});
  rr::config::LoopSettings loop{};
  BOOST_CHECK_THROW(daemon_ns::run_worker({.once = true}, "test-loop", loop, worker), std::runtime_error);
  BOOST_TEST(worker.calls == 2);
}

BOOST_AUTO_TEST_CASE(the_loop_mode_announces_once_and_runs_until_a_stop) {
  ScriptedWorker worker({10, 10, 0});
  rr::config::LoopSettings loop{};
  loop.idle_sleep = 10ms;
  loop.max_backoff = 10ms;
  std::thread stopper([] {
    std::this_thread::sleep_for(200ms);
    daemon_ns::request_stop();
  });
  const int status = daemon_ns::run_worker({}, "test-loop", loop, worker);
  stopper.join();
  BOOST_TEST(status == 0);
  BOOST_TEST(worker.announced == 1);
  BOOST_TEST(worker.calls > 3);  // idle passes go on after the scripted ones
}

BOOST_AUTO_TEST_SUITE_END()
