// Environment variable parsing with one clear error per bad variable.
#include "common/config/environment.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rr::config {

ConfigError::ConfigError(std::string variable, std::string problem)
    : std::runtime_error(variable + ": " + problem), variable_(std::move(variable)), problem_(std::move(problem)) {}

Environment Environment::process() {
  return Environment([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  });
}

Environment Environment::from_map(std::map<std::string, std::string> values) {
  return Environment([values = std::move(values)](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  });
}

std::optional<std::string> Environment::get(const std::string& name) const {
  auto value = lookup_(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

std::string Environment::required_string(const std::string& name) const {
  auto value = get(name);
  if (!value) throw ConfigError(name, "is not set");
  return *value;
}

std::string Environment::string_or(const std::string& name, std::string fallback) const {
  return get(name).value_or(std::move(fallback));
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

namespace {

// How many digits stand on each side of the point in [-+]digits[.digits]-like text (digits may be
// missing on either side); nothing when the text has another shape or is too long to be a
// coordinate or a setting.
struct DecimalShape {
  std::size_t integer_digits = 0;
  bool point = false;
  std::size_t fraction_digits = 0;
};

std::optional<DecimalShape> decimal_shape(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  DecimalShape shape;
  std::size_t i = 0;
  if (text[i] == '-' || text[i] == '+') ++i;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      ++(shape.point ? shape.fraction_digits : shape.integer_digits);
    } else if (c == '.' && !shape.point) {
      shape.point = true;
    } else {
      return std::nullopt;
    }
  }
  return shape;
}

// The value of text decimal_shape accepted, when finite.
std::optional<double> decimal_value(std::string_view text) {
  // from_chars rejects a leading '+'.
  std::string_view digits_part = text[0] == '+' ? text.substr(1) : text;
  double value = 0;
  auto [end, error] =
      std::from_chars(digits_part.data(), digits_part.data() + digits_part.size(), value, std::chars_format::fixed);
  if (error != std::errc() || end != digits_part.data() + digits_part.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<double> parse_plain_decimal(std::string_view text) {
  auto shape = decimal_shape(text);
  if (!shape || shape->integer_digits == 0 || (shape->point && shape->fraction_digits == 0)) return std::nullopt;
  return decimal_value(text);
}

std::optional<double> parse_finite_decimal(std::string_view text) {
  auto shape = decimal_shape(text);
  if (!shape || shape->integer_digits + shape->fraction_digits == 0) return std::nullopt;
  return decimal_value(text);
}

std::int64_t Environment::integer(const std::string& name, std::int64_t fallback, std::int64_t min,
                                  std::int64_t max) const {
  auto text = get(name);
  if (!text) return fallback;
  auto value = parse_integer(*text);
  if (!value) throw ConfigError(name, "must be a whole number, got \"" + *text + "\"");
  if (*value < min || *value > max) {
    throw ConfigError(name, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                                std::to_string(*value));
  }
  return *value;
}

std::uint16_t Environment::port(const std::string& name, std::optional<std::uint16_t> fallback) const {
  auto text = get(name);
  if (!text) {
    if (!fallback) throw ConfigError(name, "is not set");
    return *fallback;
  }
  auto value = parse_integer(*text);
  if (!value || *value < 1 || *value > 65535) {
    throw ConfigError(name, "must be a TCP port between 1 and 65535, got \"" + *text + "\"");
  }
  return static_cast<std::uint16_t>(*value);
}

namespace {

// `unit` words the error: "" for plain numbers, " seconds" for durations.
double bounded_decimal(const std::string& name, const std::optional<std::string>& text, double fallback, double min,
                       double max, const char* unit) {
  if (!text) return fallback;
  auto value = parse_finite_decimal(*text);
  if (!value) {
    throw ConfigError(
        name, std::string("must be a ") + (*unit ? "number of seconds" : "decimal number") + ", got \"" + *text + "\"");
  }
  if (*value < min || *value > max) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "must be between %g and %g%s, got %s", min, max, unit, text->c_str());
    throw ConfigError(name, buf);
  }
  return *value;
}

}  // namespace

double Environment::decimal(const std::string& name, double fallback, double min, double max) const {
  return bounded_decimal(name, get(name), fallback, min, max, "");
}

std::chrono::milliseconds Environment::seconds(const std::string& name, double fallback, double min, double max) const {
  double value = bounded_decimal(name, get(name), fallback, min, max, " seconds");
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(value * 1000.0)));
}

bool Environment::on_off(const std::string& name, bool fallback) const {
  auto text = get(name);
  if (!text) return fallback;
  if (*text == "on") return true;
  if (*text == "off") return false;
  throw ConfigError(name, "must be on or off");
}

std::string Environment::url(const std::string& name, std::optional<std::string> fallback,
                             std::initializer_list<std::string_view> schemes) const {
  auto text = get(name);
  if (!text) {
    if (!fallback) throw ConfigError(name, "is not set");
    return *fallback;
  }
  for (auto scheme : schemes) {
    if (text->starts_with(scheme) && text->size() > scheme.size()) return *text;
  }
  std::string expected;
  for (auto scheme : schemes) {
    if (!expected.empty()) expected += " or ";
    expected += scheme;
  }
  // Never echo the value: URLs carry passwords.
  throw ConfigError(name, "must be a URL starting with " + expected);
}

}  // namespace rr::config
