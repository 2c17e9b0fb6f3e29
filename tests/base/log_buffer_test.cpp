// The log's output buffer: lines reach the output within the flush interval, at once when urgent,
// all of them at flush and stop, never interleaved; a full output never blocks a caller, and what
// it costs is counted and reported. Then the process's own log (log::write on standard output).
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/log.hpp"
#include "common/base/log_buffer.hpp"
#include "support/text.hpp"

using rr::test::count_of;

namespace logging = rr::log;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// A pipe standing in for standard output; the test reads what the buffer wrote.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    BOOST_REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    if (read_end >= 0) ::close(read_end);
    if (write_end >= 0) ::close(write_end);
  }
  // What arrives within `timeout`, waiting until it contains `needle` (or all that came).
  std::string read_until(const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (received.find(needle) == std::string::npos) {
      auto left = std::max<long long>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      pollfd in{read_end, POLLIN, 0};
      if (::poll(&in, 1, static_cast<int>(left)) <= 0) {
        if (left == 0) break;
        continue;
      }
      char chunk[65536];
      auto n = ::read(read_end, chunk, sizeof chunk);
      if (n <= 0) break;
      received.append(chunk, static_cast<std::size_t>(n));
    }
    return received;
  }
  std::string received;
};

logging::BufferOptions quick(std::chrono::milliseconds interval) {
  logging::BufferOptions options;
  options.flush_interval = interval;
  return options;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(log_buffer)

BOOST_AUTO_TEST_CASE(a_line_waits_for_the_interval_and_no_longer) {
  Pipe out;
  logging::LineBuffer buffer(out.write_end, quick(300ms), nullptr);
  auto appended = Clock::now();
  BOOST_REQUIRE(buffer.append("one\n", false));
  // Not written at once: that is the point of the buffer.
  BOOST_TEST(out.read_until("one\n", 100ms).empty());
  BOOST_TEST(out.read_until("one\n", 2s) == "one\n");
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - appended);
  BOOST_TEST(waited.count() >= 250, waited.count() << " ms");
  // The interval plus scheduling slack on a busy machine under sanitizers.
  BOOST_TEST(waited.count() < 300 + 500, waited.count() << " ms");
}

BOOST_AUTO_TEST_CASE(an_urgent_line_is_written_at_once_with_the_lines_before_it) {
  Pipe out;
  logging::LineBuffer buffer(out.write_end, quick(10s), nullptr);
  BOOST_REQUIRE(buffer.append("info\n", false));
  auto appended = Clock::now();
  BOOST_REQUIRE(buffer.append("error\n", true));
  BOOST_TEST(out.read_until("error\n", 2s) == "info\nerror\n");
  BOOST_TEST((Clock::now() - appended < 1s));
}

BOOST_AUTO_TEST_CASE(a_full_batch_is_written_before_the_interval) {
  Pipe out;
  logging::BufferOptions options = quick(10s);
  options.flush_bytes = 1000;
  logging::LineBuffer buffer(out.write_end, options, nullptr);
  auto line = [](int i) { return std::to_string(i) + std::string(98, 'x') + "\n"; };
  for (int i = 0; i < 10; ++i) BOOST_REQUIRE(buffer.append(line(i), false));
  auto received = out.read_until(line(9), 2s);
  BOOST_TEST(received.size() == 1000u);
  BOOST_TEST(received.ends_with(line(9)));
}

BOOST_AUTO_TEST_CASE(flush_returns_once_every_line_is_written) {
  Pipe out;
  logging::LineBuffer buffer(out.write_end, quick(10s), nullptr);
  for (int i = 0; i < 100; ++i) BOOST_REQUIRE(buffer.append("line " + std::to_string(i) + "\n", false));
  BOOST_TEST(buffer.flush(2s));
  // Everything is in the pipe already: a read that does not wait finds all of it.
  BOOST_TEST(count_of(out.read_until("line 99\n", 0ms), "\n") == 100u);
}

BOOST_AUTO_TEST_CASE(lines_of_many_threads_arrive_whole_and_in_each_threads_order) {
  Pipe out;
  constexpr int kThreads = 4, kLines = 2000;
  std::string all;
  std::thread reader([&] { all = out.read_until("t3 1999\n", 30s); });
  {
    logging::LineBuffer buffer(out.write_end, quick(50ms), nullptr);
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&buffer, t] {
        for (int i = 0; i < kLines; ++i) buffer.append("t" + std::to_string(t) + " " + std::to_string(i) + "\n", false);
      });
    }
    for (auto& writer : writers) writer.join();
  }  // the destructor writes the rest
  reader.join();
  // Each line whole, and each thread's lines in the order it logged them.
  std::map<int, int> next;
  std::istringstream lines(all);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    int t = -1, i = -1;
    BOOST_REQUIRE_MESSAGE(std::sscanf(line.c_str(), "t%d %d", &t, &i) == 2, line);
    BOOST_REQUIRE_EQUAL(i, next[t]);
    ++next[t];
    ++count;
  }
  BOOST_TEST(count == kThreads * kLines);
}

BOOST_AUTO_TEST_CASE(a_full_output_never_blocks_the_caller_and_the_drops_are_reported) {
  Pipe out;
  ::fcntl(out.write_end, F_SETPIPE_SZ, 4096);  // the smallest pipe: nobody reads it yet
  logging::BufferOptions options = quick(10ms);
  options.max_pending_bytes = 64 * 1024;
  logging::LineBuffer buffer(out.write_end, options,
                             [](std::uint64_t dropped) { return "dropped=" + std::to_string(dropped) + "\n"; });
  std::string line(99, 'x');
  line += '\n';
  auto started = Clock::now();
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) accepted += buffer.append(line, i % 100 == 0) ? 1 : 0;
  // 2 MB into a pipe nobody reads: every call returned without waiting for the output.
  BOOST_TEST((Clock::now() - started < 2s));
  BOOST_TEST(accepted < 20000);
  BOOST_TEST(buffer.dropped() == static_cast<std::uint64_t>(20000 - accepted));
  // Once the output takes lines again, the buffer writes every accepted line and says how many it
  // had to drop. There may be several notices (the writer may fall behind more than once while
  // the lines pour in, each notice counting the drops since the last), and they add up. Read
  // while the buffer stops: it returns only once it has written everything, notices included.
  std::thread reader([&] { out.read_until("never sent", 15s); });
  buffer.stop(10s);
  ::close(out.write_end);  // the reader sees the end of the output now
  out.write_end = -1;
  reader.join();
  const auto& received = out.received;
  std::uint64_t reported = 0;
  for (auto at = received.find("dropped="); at != std::string::npos; at = received.find("dropped=", at + 1)) {
    reported += std::stoull(received.substr(at + 8));
  }
  BOOST_TEST(reported == static_cast<std::uint64_t>(20000 - accepted));
  BOOST_TEST(count_of(received, line) == static_cast<std::size_t>(accepted));
}

BOOST_AUTO_TEST_CASE(after_stop_lines_are_written_before_append_returns) {
  Pipe out;
  logging::LineBuffer buffer(out.write_end, quick(10s), nullptr);
  BOOST_REQUIRE(buffer.append("before\n", false));
  buffer.stop(2s);
  BOOST_TEST(out.read_until("before\n", 0ms) == "before\n");
  BOOST_REQUIRE(buffer.append("after\n", false));
  BOOST_TEST(out.read_until("after\n", 0ms) == "before\nafter\n");
}

BOOST_AUTO_TEST_SUITE_END()

// The process's log, on its standard output (redirected to a pipe for the test).
struct StdoutToPipe {
  Pipe out;
  int saved = ::dup(STDOUT_FILENO);
  StdoutToPipe() {
    logging::flush();
    BOOST_REQUIRE(::dup2(out.write_end, STDOUT_FILENO) >= 0);
  }
  ~StdoutToPipe() {
    logging::flush();
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
  }
};

BOOST_FIXTURE_TEST_SUITE(process_log, StdoutToPipe)

BOOST_AUTO_TEST_CASE(an_info_line_reaches_standard_output_within_the_flush_interval) {
  const auto interval = logging::BufferOptions{}.flush_interval;
  auto logged = Clock::now();
  logging::info("within the interval", {{"n", 1}});
  auto received = out.read_until("n=1\n", interval + 1s);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - logged);
  BOOST_TEST(received.find("msg=\"within the interval\" n=1\n") != std::string::npos, received);
  // The interval plus scheduling slack on a busy machine under sanitizers.
  BOOST_TEST(waited.count() < interval.count() + 500, waited.count() << " ms");
}

BOOST_AUTO_TEST_CASE(a_forked_child_writes_its_own_lines_and_not_its_parents) {
  logging::info("parent before fork");  // still pending when the child is forked
  pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    logging::info("child line");  // no writer thread in the child: written before info() returns
    ::_exit(0);                   // no exit handlers: only what was written before counts
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(logging::flush(2s));
  auto received = out.read_until("parent before fork", 1s);
  BOOST_TEST(count_of(received, "msg=\"child line\"") == 1u, received);
  BOOST_TEST(count_of(received, "msg=\"parent before fork\"") == 1u, received);
}

BOOST_AUTO_TEST_CASE(fields_render_numbers_and_text_as_before) {
  logging::info("fields", {{"i", -42},
                           {"u", std::uint64_t{18446744073709551615u}},
                           {"d", 0.25},
                           {"ms", std::chrono::milliseconds(1500)},
                           {"b", true},
                           {"s", std::string("a b")},
                           {"v", std::string_view("plain")}});
  BOOST_TEST(logging::flush(2s));
  auto received = out.read_until("\n", 0ms);
  BOOST_TEST(received.find(R"(msg=fields i=-42 u=18446744073709551615 d=0.25 ms=1500ms b=true s="a b" v=plain)") !=
                 std::string::npos,
             received);
}

BOOST_AUTO_TEST_SUITE_END()
