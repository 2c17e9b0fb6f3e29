// The rows of a statement or call that common/db ran on its own libpq session: an owned PGresult
// (PQclear once the last Result, Row or Field sharing it is gone) with the small read API the
// product needs. Values arrive as text and are converted on reading; a conversion that does not
// fit (a NULL read as a value, "abc" as an integer, a column that is not there) throws FieldError.
#pragma once

#include <libpq-fe.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace rr::db {

class FieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
struct ResultClear {
  void operator()(PGresult* result) const { PQclear(result); }
};
using SharedResult = std::shared_ptr<PGresult>;

// Index-based iteration for Result (over rows) and Row (over fields).
template <typename Owner, typename Item>
class IndexIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Item;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Item;
  IndexIterator() = default;
  IndexIterator(const Owner* owner, int index) : owner_(owner), index_(index) {}
  Item operator*() const { return (*owner_)[index_]; }
  IndexIterator& operator++() {
    ++index_;
    return *this;
  }
  IndexIterator operator++(int) {
    auto before = *this;
    ++index_;
    return before;
  }
  bool operator==(const IndexIterator& other) const { return index_ == other.index_; }

 private:
  const Owner* owner_ = nullptr;
  int index_ = 0;
};

// Text to value, for the types the product reads: throws FieldError naming `text` and the type.
void parse_field(std::string_view text, std::string& value);
void parse_field(std::string_view text, std::int64_t& value);
void parse_field(std::string_view text, int& value);
void parse_field(std::string_view text, bool& value);
void parse_field(std::string_view text, double& value);
}  // namespace detail

// One value of one row.
class Field {
 public:
  Field(detail::SharedResult result, int row, int column) : result_(std::move(result)), row_(row), column_(column) {}

  bool is_null() const { return PQgetisnull(result_.get(), row_, column_) != 0; }
  // The value's text, NUL-terminated ("" for NULL).
  const char* c_str() const { return PQgetvalue(result_.get(), row_, column_); }
  std::string_view view() const {
    return {c_str(), static_cast<std::size_t>(PQgetlength(result_.get(), row_, column_))};
  }
  const char* name() const { return PQfname(result_.get(), column_); }

  // The value as T: std::string, std::int64_t, int, bool, double, or std::optional of one of them
  // (nullopt for NULL). A NULL read as anything but an optional throws FieldError.
  template <typename T>
  T as() const {
    if constexpr (is_optional<T>::value) {
      if (is_null()) return std::nullopt;
      return as<typename T::value_type>();
    } else {
      if (is_null()) throw FieldError(std::string("NULL in column ") + name() + " read as a value");
      T value{};
      detail::parse_field(view(), value);
      return value;
    }
  }
  // The value as T, or `otherwise` for NULL.
  template <typename T>
  T as(const T& otherwise) const {
    return is_null() ? otherwise : as<T>();
  }

 private:
  template <typename T>
  struct is_optional : std::false_type {};
  template <typename T>
  struct is_optional<std::optional<T>> : std::true_type {};

  detail::SharedResult result_;
  int row_;
  int column_;
};

// One row; fields by position or by column name.
class Row {
 public:
  using size_type = int;
  using const_iterator = detail::IndexIterator<Row, Field>;

  Row(detail::SharedResult result, int row) : result_(std::move(result)), row_(row) {}

  Field operator[](size_type column) const;
  Field operator[](const char* column) const;
  Field operator[](const std::string& column) const { return (*this)[column.c_str()]; }
  size_type size() const { return PQnfields(result_.get()); }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

 private:
  detail::SharedResult result_;
  int row_;
};

// A successful result: rows returned (possibly none) or a command's completion.
class Result {
 public:
  using size_type = int;
  using const_iterator = detail::IndexIterator<Result, Row>;

  // Takes ownership of `result`, which must be a success (PGRES_TUPLES_OK or PGRES_COMMAND_OK):
  // db::checked_result turns errors into exceptions first.
  explicit Result(PGresult* result) : result_(result, detail::ResultClear{}) {}
  // No rows and no columns, until assigned.
  Result() = default;

  size_type size() const { return PQntuples(result_.get()); }
  bool empty() const { return size() == 0; }
  size_type columns() const { return PQnfields(result_.get()); }
  Row operator[](size_type row) const;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  // The rows an INSERT, UPDATE, DELETE (and so on) touched; 0 for other commands.
  std::size_t affected_rows() const;

 private:
  detail::SharedResult result_;
};

}  // namespace rr::db
