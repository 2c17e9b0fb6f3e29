// Typed reads of environment variables: each read names its variable, default and bounds in one
// place, and a bad value throws ConfigError naming the variable (the binary exits 2 with it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rr::config {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string variable, std::string problem);
  const std::string& variable() const { return variable_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string variable_;
  std::string problem_;
};

class Environment {
 public:
  using Lookup = std::function<std::optional<std::string>(const std::string&)>;

  explicit Environment(Lookup lookup) : lookup_(std::move(lookup)) {}
  static Environment process();
  static Environment from_map(std::map<std::string, std::string> values);

  // Unset and empty are the same: an operator who writes `FOO=` in a .env file means "unset".
  std::optional<std::string> get(const std::string& name) const;

  std::string required_string(const std::string& name) const;
  std::string string_or(const std::string& name, std::string fallback) const;
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  std::uint16_t port(const std::string& name, std::optional<std::uint16_t> fallback) const;
  // A decimal number within bounds (rates, fractions).
  double decimal(const std::string& name, double fallback, double min, double max) const;
  // Seconds as a decimal number ("90", "0.25"); bounds are in seconds.
  std::chrono::milliseconds seconds(const std::string& name, double fallback, double min, double max) const;
  // A switch written `on` or `off` (nothing else, so a typo is not silently read as either).
  bool on_off(const std::string& name, bool fallback) const;
  // A URL whose scheme is one of `schemes` (e.g. "postgresql://", "postgres://").
  std::string url(const std::string& name, std::optional<std::string> fallback,
                  std::initializer_list<std::string_view> schemes) const;

 private:
  Lookup lookup_;
};

// Strict number parsing shared with request validation: the whole string must be consumed, and
// none of them reads an exponent, hex, infinity, NaN, a space or a NUL.
std::optional<std::int64_t> parse_integer(std::string_view text);
// Exactly [-+]digits[.digits], a point with digits on both sides: the API's documented form for a
// coordinate, which a form field, a JSON string and a JSON number must all have.
std::optional<double> parse_plain_decimal(std::string_view text);
// Also a point with digits on one side only (".5", "5."), as operators write settings and flags.
std::optional<double> parse_finite_decimal(std::string_view text);

}  // namespace rr::config
