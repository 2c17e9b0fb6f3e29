// One event per line in logfmt on standard output, so foreman and journald show it as it happens.
#pragma once

#include <chrono>
#include <concepts>
#include <initializer_list>
#include <string>
#include <string_view>

namespace rr::log {

enum class Level { debug, info, warn, error };

// A key=value pair; the value is rendered to text when the field is built.
struct Field {
  std::string_view key;
  std::string value;

  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v ? v : "") {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  template <std::integral T>
  Field(std::string_view k, T v) : key(k), value(std::to_string(v)) {}
  Field(std::string_view k, double v);
  Field(std::string_view k, std::chrono::milliseconds v);
};

using Fields = std::initializer_list<Field>;

// Called once at start: names the process on every line and makes stdout line-buffered.
void init(std::string_view process_name);
void set_min_level(Level level);
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

void write(Level level, std::string_view msg, Fields fields = {});
inline void debug(std::string_view msg, Fields f = {}) { write(Level::debug, msg, f); }
inline void info(std::string_view msg, Fields f = {}) { write(Level::info, msg, f); }
inline void warn(std::string_view msg, Fields f = {}) { write(Level::warn, msg, f); }
inline void error(std::string_view msg, Fields f = {}) { write(Level::error, msg, f); }

}  // namespace rr::log
