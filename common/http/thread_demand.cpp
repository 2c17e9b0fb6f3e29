// Reading a thread's schedstat.
#include "common/http/thread_demand.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <string>

namespace rr::http {
namespace {

// One decimal field and the single space or newline after it; advances `text`.
std::optional<std::uint64_t> take_field(std::string_view& text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end == text.data() || end == text.data() + text.size()) return std::nullopt;
  if (*end != ' ' && *end != '\n') return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()) + 1);
  return value;
}

}  // namespace

std::optional<ThreadDemand> parse_schedstat(std::string_view text) {
  auto ran = take_field(text);
  auto waited = take_field(text);
  auto slices = take_field(text);
  if (!ran || !waited || !slices || !(text.empty() || text == "\n")) return std::nullopt;
  return ThreadDemand{static_cast<double>(*ran) * 1e-9, static_cast<double>(*waited) * 1e-9};
}

std::optional<ThreadDemand> read_thread_demand(pid_t tid) {
  std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buffer[96];
  ssize_t length = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  if (length <= 0 || static_cast<std::size_t>(length) == sizeof buffer) return std::nullopt;
  return parse_schedstat(std::string_view(buffer, static_cast<std::size_t>(length)));
}

}  // namespace rr::http
