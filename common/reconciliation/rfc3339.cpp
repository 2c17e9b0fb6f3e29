// A strict reader: fixed-width fields, a calendar check, at most microseconds, and a zone.
#include "common/reconciliation/rfc3339.hpp"

#include <chrono>

namespace rr::reconciliation {
namespace {

std::optional<int> digits(std::string_view text, std::size_t at, std::size_t count) {
  if (at + count > text.size()) return std::nullopt;
  int value = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<Rfc3339Time> parse_rfc3339(std::string_view text) {
  auto year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  auto hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  std::chrono::year_month_day date{std::chrono::year(*year), std::chrono::month(static_cast<unsigned>(*month)),
                                   std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  std::size_t at = 19;
  std::int64_t microseconds = 0;
  if (at < text.size() && text[at] == '.') {
    std::size_t first = ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    std::size_t count = at - first;
    if (count == 0 || count > 6) return std::nullopt;
    microseconds = *digits(text, first, count);
    for (std::size_t i = count; i < 6; ++i) microseconds *= 10;
  }
  std::int64_t offset_seconds = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    auto hours = digits(text, at + 1, 2), minutes = digits(text, at + 4, 2);
    if (!hours || !minutes || text[at + 3] != ':' || *hours > 23 || *minutes > 59) return std::nullopt;
    offset_seconds = (text[at] == '+' ? 1 : -1) * (*hours * 3600 + *minutes * 60);
    at += 6;
  } else {
    return std::nullopt;
  }
  if (at != text.size()) return std::nullopt;
  auto days = std::chrono::sys_days(date).time_since_epoch().count();
  std::int64_t seconds = static_cast<std::int64_t>(days) * 86400 + *hour * 3600 + *minute * 60 + *second;
  return Rfc3339Time{seconds - offset_seconds, microseconds};
}

}  // namespace rr::reconciliation
