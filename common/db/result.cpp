// Reading an owned PGresult: positions checked, text converted strictly.
#include "common/db/result.hpp"

#include <charconv>
#include <system_error>

namespace rr::db {
namespace detail {
namespace {

[[noreturn]] void unreadable(std::string_view text, const char* type) {
  throw FieldError("\"" + std::string(text) + "\" is not " + type);
}

template <typename Number>
void parse_number(std::string_view text, Number& value, const char* type) {
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc{} || stop != end) unreadable(text, type);
}

}  // namespace

void parse_field(std::string_view text, std::string& value) { value.assign(text); }
void parse_field(std::string_view text, std::int64_t& value) { parse_number(text, value, "a 64-bit integer"); }
void parse_field(std::string_view text, int& value) { parse_number(text, value, "an int"); }
void parse_field(std::string_view text, double& value) { parse_number(text, value, "a double"); }

void parse_field(std::string_view text, bool& value) {
  // PostgreSQL's text output of a boolean is "t" or "f".
  if (text == "t" || text == "true") {
    value = true;
  } else if (text == "f" || text == "false") {
    value = false;
  } else {
    unreadable(text, "a boolean");
  }
}

}  // namespace detail

Field Row::operator[](size_type column) const {
  if (column < 0 || column >= size()) {
    throw FieldError("no column " + std::to_string(column) + " in a row of " + std::to_string(size()));
  }
  return Field(result_, row_, column);
}

Field Row::operator[](const char* column) const {
  const int number = PQfnumber(result_.get(), column);
  if (number < 0) throw FieldError(std::string("no column named ") + column);
  return Field(result_, row_, number);
}

Row Result::operator[](size_type row) const {
  if (row < 0 || row >= size()) {
    throw FieldError("no row " + std::to_string(row) + " in a result of " + std::to_string(size()));
  }
  return Row(result_, row);
}

std::size_t Result::affected_rows() const {
  const char* count = PQcmdTuples(result_.get());
  if (count == nullptr || *count == '\0') return 0;
  std::int64_t value = 0;
  detail::parse_field(count, value);
  return static_cast<std::size_t>(value);
}

}  // namespace rr::db
