// One event per line in logfmt on standard output, so foreman and journald show it as it happens:
// lines are queued and written in batches by a thread of their own (log_buffer.hpp), at most
// BufferOptions::flush_interval (50 ms) after they were logged, at once for warnings and errors,
// and all of them at exit (see flush()).
#pragma once

#include <charconv>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace rr::log {

enum class Level { debug, info, warn, error };

// A key=value pair. Text values are viewed, not copied: a Field lives only within the call that
// logs it (Fields is an initializer list), so the text it views (even a temporary's) outlives it.
// Numbers are rendered into the field itself.
class Field {
 public:
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v ? v : "") {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  template <std::integral T>
  Field(std::string_view k, T v) : key(k) {
    auto end = std::to_chars(digits_, digits_ + sizeof digits_, v).ptr;
    value = std::string_view(digits_, static_cast<std::size_t>(end - digits_));
  }
  Field(std::string_view k, double v);
  Field(std::string_view k, std::chrono::milliseconds v);
  Field(const Field& other);
  Field& operator=(const Field&) = delete;

  std::string_view key;
  std::string_view value;  // the rendered text

 private:
  char digits_[32];  // a number's text, which `value` then views
};

using Fields = std::initializer_list<Field>;

// Called once at start: names the process on every line and makes stdout line-buffered.
void init(std::string_view process_name);
void set_min_level(Level level);
// Whether a line of `level` is written: for a field that costs something to compute (a hash), so
// that a debug line filtered out costs nothing.
bool enabled(Level level);
// For commands whose standard output is their result (`user create` prints a token): log to stderr.
void use_stderr();

// Renders a line without the trailing newline; exposed for tests.
std::string format_line(Level level, std::string_view msg, Fields fields);
// Quotes a value when logfmt needs it (empty, spaces, '=', quotes, control characters, bytes that
// are not valid UTF-8). Control characters and invalid bytes are written as \xNN, so a value from
// a client can neither start a new line nor make the line invalid UTF-8; valid UTF-8 stays as is.
std::string quote_value(std::string_view value);
// `value` when it has at most `max_bytes`, else its first `max_bytes` (less a partial UTF-8
// character) and a marker "...[cut, N bytes]" giving the full size: for values a client chooses,
// so that one request cannot write a line of any length.
std::string truncated(std::string_view value, std::size_t max_bytes);

// Queues the line; never waits for the output (past a bound of unwritten lines it drops them and
// later logs how many). Warnings and errors wake the writer at once.
void write(Level level, std::string_view msg, Fields fields = {});
// Waits until every line logged before the call is written, at most `timeout`; false when the
// output did not take them in time. Runs by itself at exit (std::exit, a return from main), with a
// timeout of 5 s; not after _exit() or a crash, which lose the lines of the last interval.
bool flush(std::chrono::milliseconds timeout = std::chrono::seconds(5));
// Lines dropped because the output did not keep up.
std::uint64_t dropped_lines();
inline void debug(std::string_view msg, Fields f = {}) { write(Level::debug, msg, f); }
inline void info(std::string_view msg, Fields f = {}) { write(Level::info, msg, f); }
inline void warn(std::string_view msg, Fields f = {}) { write(Level::warn, msg, f); }
inline void error(std::string_view msg, Fields f = {}) { write(Level::error, msg, f); }

}  // namespace rr::log
