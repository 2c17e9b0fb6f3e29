// How a C++ value travels to PostgreSQL, the same for a named statement's parameters and a
// one-trip call's arguments: as text (nullopt is NULL), which PostgreSQL reads by the parameter's
// type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rr::db {

// Bytes for a bytea parameter (a token's hash, say), sent in bytea's hex text form.
struct Bytes {
  std::string bytes;
};
inline Bytes bytes(std::string value) { return Bytes{std::move(value)}; }

using SqlArguments = std::vector<std::optional<std::string>>;

namespace detail {
inline std::optional<std::string> call_argument(const std::optional<std::string>& value) { return value; }
inline std::optional<std::string> call_argument(const std::string& value) { return value; }
inline std::optional<std::string> call_argument(std::string_view value) { return std::string(value); }
inline std::optional<std::string> call_argument(const char* value) { return std::string(value); }
inline std::optional<std::string> call_argument(bool value) { return value ? "true" : "false"; }
template <typename Number>
requires std::is_integral_v<Number> std::optional<std::string> call_argument(Number value) {
  return std::to_string(value);
}
// The shortest text that reads back as the same double (std::to_chars): exact, and without the
// stream and locale machinery a conversion through streams goes through, which showed in the
// request's profile.
std::optional<std::string> call_argument(double value);
std::optional<std::string> call_argument(const Bytes& value);
template <typename T>
std::optional<std::string> call_argument(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return call_argument(*value);
}
}  // namespace detail

template <typename... Args>
SqlArguments sql_arguments(const Args&... args) {
  return SqlArguments{detail::call_argument(args)...};
}

}  // namespace rr::db
