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
// Quotes a value when logfmt needs it (empty, spaces, '=', quotes, control characters).
std::string quote_value(std::string_view value);

void write(Level level, std::string_view msg, Fields fields = {});
inline void debug(std::string_view msg, Fields f = {}) { write(Level::debug, msg, f); }
inline void info(std::string_view msg, Fields f = {}) { write(Level::info, msg, f); }
inline void warn(std::string_view msg, Fields f = {}) { write(Level::warn, msg, f); }
inline void error(std::string_view msg, Fields f = {}) { write(Level::error, msg, f); }

}  // namespace rr::log
