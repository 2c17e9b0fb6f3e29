// logfmt writer: each line is built whole and written with one call so threads never interleave.
#include "common/base/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace rr::log {
namespace {

std::string g_process = "rocket-rides";
std::atomic<Level> g_min_level{Level::info};
std::mutex g_write_mutex;
std::FILE* g_stream = stdout;

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

std::string timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  return buf;
}

}  // namespace

Field::Field(std::string_view k, double v) : key(k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  value = buf;
}

Field::Field(std::string_view k, std::chrono::milliseconds v) : key(k), value(std::to_string(v.count()) + "ms") {}

void init(std::string_view process_name) {
  g_process = std::string(process_name);
  // A pipe (foreman, journald) would otherwise be fully buffered and show nothing until exit.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
}

void set_min_level(Level level) { g_min_level = level; }

void use_stderr() { g_stream = stderr; }

std::string quote_value(std::string_view value) {
  bool needs_quotes = value.empty();
  for (unsigned char c : value) {
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f) {
      needs_quotes = true;
      break;
    }
  }
  if (!needs_quotes) return std::string(value);
  std::string out = "\"";
  for (unsigned char c : value) {
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
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string format_line(Level level, std::string_view msg, Fields fields) {
  std::string line;
  line.reserve(128);
  line += "ts=";
  line += timestamp();
  line += " level=";
  line += level_name(level);
  line += " proc=";
  line += quote_value(g_process);
  line += " msg=";
  line += quote_value(msg);
  for (const auto& field : fields) {
    line += ' ';
    line += field.key;
    line += '=';
    line += quote_value(field.value);
  }
  return line;
}

void write(Level level, std::string_view msg, Fields fields) {
  if (level < g_min_level.load(std::memory_order_relaxed)) return;
  std::string line = format_line(level, msg, fields);
  line += '\n';
  std::lock_guard lock(g_write_mutex);
  std::fwrite(line.data(), 1, line.size(), g_stream);
  std::fflush(g_stream);
}

}  // namespace rr::log
