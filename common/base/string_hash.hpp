// A transparent hash for unordered containers keyed by std::string, so that a lookup by
// std::string_view or a literal does not build a std::string first (C++20 heterogeneous lookup:
// std::unordered_map<std::string, V, StringHash, std::equal_to<>>).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rr {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};

template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace rr
