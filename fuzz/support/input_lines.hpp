// Fuzz inputs of several parts, written as lines: a target takes its leading parts (a path argument,
// a Content-Type) one line each and reads the rest as the body. Seeds stay readable text, and a
// mutation of one part leaves the others alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rr::fuzz {

class InputLines {
 public:
  InputLines(const std::uint8_t* data, std::size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  // The next line without its '\n' (all that is left when no '\n' follows).
  std::string_view line() {
    auto end = rest_.find('\n');
    std::string_view line = rest_.substr(0, end);
    rest_.remove_prefix(end == std::string_view::npos ? rest_.size() : end + 1);
    return line;
  }

  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

}  // namespace rr::fuzz
