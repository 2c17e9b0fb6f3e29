// logfmt writer: each line is built whole in a buffer of the calling thread and handed to the
// output buffer in one piece, so threads never interleave and a line costs no allocation.
#include "common/base/log.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/base/log_buffer.hpp"
#include "common/base/utf8.hpp"

namespace rr::log {
namespace {

std::string g_process = "rocket-rides";
std::atomic<Level> g_min_level{Level::info};

// How long exit waits for the output to take the last lines.
constexpr std::chrono::milliseconds kExitFlushTimeout{5000};

const char* level_name(Level level) {
  switch (level) {
    case Level::debug:
      return "debug";
    case Level::info:
      return "info";
    case Level::warn:
      return "warn";
    case Level::error:
      return "error";
  }
  return "info";
}

// The date and time to the second change once a second; each thread keeps the text of its
// current second and only appends the milliseconds.
void append_timestamp(std::string& out) {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  thread_local std::time_t cached_second = -1;
  thread_local char cached[32];
  if (secs != cached_second) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    // strftime knows the ranges of the fields and reports a text that does not fit (0), where
    // snprintf of the raw ints could only be truncated silently.
    if (std::strftime(cached, sizeof cached, "%Y-%m-%dT%H:%M:%S.", &tm) == 0) cached[0] = '\0';
    cached_second = secs;
  }
  out += cached;
  char ms[4] = {static_cast<char>('0' + millis / 100), static_cast<char>('0' + millis / 10 % 10),
                static_cast<char>('0' + millis % 10), 'Z'};
  out.append(ms, 4);
}

std::string drop_notice(std::uint64_t dropped) {
  std::string line = format_line(Level::warn, "log lines dropped: the output did not keep up", {{"dropped", dropped}});
  line += '\n';
  return line;
}

// Created by the first line and never destroyed: static destructors may still log, after the exit
// handler below has written everything and made later lines synchronous.
LineBuffer& output() {
  static LineBuffer* const buffer = [] {
    auto* created = new LineBuffer(STDOUT_FILENO, BufferOptions{}, drop_notice);
    ::pthread_atfork([] { output().before_fork(); }, [] { output().after_fork_in_parent(); },
                     [] { output().after_fork_in_child(); });
    std::atexit([] { output().stop(kExitFlushTimeout); });
    return created;
  }();
  return *buffer;
}

}  // namespace

Field::Field(std::string_view k, double v) : key(k) {
  // Same text as printf's %.6g, without the locale machinery.
  auto end = std::to_chars(digits_, digits_ + sizeof digits_, v, std::chars_format::general, 6).ptr;
  value = std::string_view(digits_, static_cast<std::size_t>(end - digits_));
}

Field::Field(std::string_view k, std::chrono::milliseconds v) : key(k) {
  auto end = std::to_chars(digits_, digits_ + sizeof digits_ - 2, v.count()).ptr;
  *end++ = 'm';
  *end++ = 's';
  value = std::string_view(digits_, static_cast<std::size_t>(end - digits_));
}

Field::Field(const Field& other) : key(other.key), value(other.value) {
  // A number's text lives in the field: view the copy's own.
  if (value.data() >= other.digits_ && value.data() < other.digits_ + sizeof other.digits_) {
    std::copy(other.digits_, other.digits_ + sizeof digits_, digits_);
    value = std::string_view(digits_ + (other.value.data() - other.digits_), other.value.size());
  }
}

void init(std::string_view process_name) {
  g_process = std::string(process_name);
  // A pipe (foreman, journald) would otherwise be fully buffered and show nothing until exit.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
}

void set_min_level(Level level) { g_min_level = level; }

bool enabled(Level level) { return level >= g_min_level.load(std::memory_order_relaxed); }

void use_stderr() { output().set_fd(STDERR_FILENO); }

// The length of the UTF-8 character at the start of `rest` when it is written as it is: 0 for a
// byte that is not valid UTF-8 (client bytes must not make the log itself invalid UTF-8, which
// log shippers reject or mangle) and for C1 controls (a terminal showing the log would act on them).
static std::size_t printable_sequence_length(std::string_view rest) {
  std::size_t length = utf8::sequence_length(rest);
  if (utf8::is_c1_control(rest.substr(0, length))) return 0;
  return length;
}

static void append_hex_escape(std::string& out, unsigned char c) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += "\\x";
  out += kDigits[c >> 4];
  out += kDigits[c & 0xf];
}

static bool needs_quotes(std::string_view value) {
  if (value.empty()) return true;
  for (std::size_t i = 0; i < value.size();) {
    auto c = static_cast<unsigned char>(value[i]);
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f) return true;
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = printable_sequence_length(value.substr(i));
    if (length == 0) return true;
    i += length;
  }
  return false;
}

static void append_quoted(std::string& out, std::string_view value) {
  if (!needs_quotes(value)) {
    out += value;
    return;
  }
  out += '"';
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      std::size_t length = printable_sequence_length(value.substr(i));
      if (length > 0) {
        out += value.substr(i, length);
        i += length - 1;
      } else if (utf8::sequence_length(value.substr(i)) == 2) {
        // Valid but not printable, so a C1 control: both bytes escaped, as they came.
        append_hex_escape(out, c);
        append_hex_escape(out, static_cast<unsigned char>(value[++i]));
      } else {
        append_hex_escape(out, c);  // one invalid byte; the next may start a valid character
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          append_hex_escape(out, c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string truncated(std::string_view value, std::size_t max_bytes) {
  if (value.size() <= max_bytes) return std::string(value);
  std::size_t cut = max_bytes;
  // Back off to the start of a character rather than leave half of one (it would show as \xNN).
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80; ++i) --cut;
  return std::string(value.substr(0, cut)) + "...[cut, " + std::to_string(value.size()) + " bytes]";
}

std::string quote_value(std::string_view value) {
  std::string out;
  append_quoted(out, value);
  return out;
}

namespace {

void append_line(std::string& line, Level level, std::string_view msg, Fields fields) {
  line += "ts=";
  append_timestamp(line);
  line += " level=";
  line += level_name(level);
  line += " proc=";
  append_quoted(line, g_process);
  line += " msg=";
  append_quoted(line, msg);
  for (const auto& field : fields) {
    line += ' ';
    line += field.key;
    line += '=';
    append_quoted(line, field.value);
  }
}

}  // namespace

std::string format_line(Level level, std::string_view msg, Fields fields) {
  std::string line;
  line.reserve(256);
  append_line(line, level, msg, fields);
  return line;
}

void write(Level level, std::string_view msg, Fields fields) {
  if (level < g_min_level.load(std::memory_order_relaxed)) return;
  // Each thread reuses its own line: no allocation once it has grown to the longest line.
  thread_local std::string line;
  line.clear();
  append_line(line, level, msg, fields);
  line += '\n';
  output().append(line, level >= Level::warn);
  // A line of a client's making may be long; do not keep its size for every later line.
  if (line.capacity() > 64 * 1024) std::string().swap(line);
}

bool flush(std::chrono::milliseconds timeout) { return output().flush(timeout); }

std::uint64_t dropped_lines() { return output().dropped(); }

}  // namespace rr::log
