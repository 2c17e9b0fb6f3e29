// HTML built so that escaping cannot be forgotten: markup can only come from string literals in
// the source (the _markup suffix), and everything else appended to an Html (request values,
// database values, numbers) is escaped for text and quoted attribute values alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rr::web {

// A piece of markup written in the source. Only the literal operator below makes one, so no
// runtime string can pass for markup.
class Markup {
 public:
  std::string_view text() const { return text_; }

 private:
  constexpr explicit Markup(std::string_view text) : text_(text) {}
  std::string_view text_;
  friend constexpr Markup operator""_markup(const char* text, std::size_t size);
};

constexpr Markup operator""_markup(const char* text, std::size_t size) { return Markup({text, size}); }

// &, <, >, " and ' as character references; every other byte as it is. Safe in element text and
// in a double- or single-quoted attribute value.
std::string escape(std::string_view text);

class Html {
 public:
  Html& operator<<(Markup markup) {
    out_ += markup.text();
    return *this;
  }
  Html& operator<<(std::string_view text) {
    out_ += escape(text);
    return *this;
  }
  Html& operator<<(const char* text) { return *this << std::string_view(text); }
  Html& operator<<(const std::string& text) { return *this << std::string_view(text); }
  Html& operator<<(std::int64_t number) {
    out_ += std::to_string(number);
    return *this;
  }
  // A fragment built by another Html: already escaped.
  Html& operator<<(const Html& fragment) {
    out_ += fragment.out_;
    return *this;
  }

  const std::string& str() const { return out_; }
  std::string release() && { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace rr::web
