// A part of a fuzz input that holds a list (header fields one per line, a comma-separated value),
// cut into its elements.
#pragma once

#include <string_view>
#include <vector>

namespace rr::fuzz {

// `text` cut at every `separator`: one more element than separators, empty ones kept.
inline std::vector<std::string_view> split_all(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (;;) {
    auto cut = text.find(separator);
    pieces.push_back(text.substr(0, cut));
    if (cut == std::string_view::npos) return pieces;
    text.remove_prefix(cut + 1);
  }
}

}  // namespace rr::fuzz
