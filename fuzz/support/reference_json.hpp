// A second JSON reader for the targets to hold ours against: Boost.JSON, which shares no code with
// RapidJSON (compiled in support/boost_sources.cpp). It reads RFC 8259 JSON strictly: no comments,
// no trailing commas, no bytes after the value, UTF-8 checked.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string_view>

namespace rr::fuzz {

// The value, or nothing when Boost.JSON refuses the text. Nesting as deep as the input can hold
// (its default stops at 32 levels, which our reader does not).
inline std::optional<boost::json::value> reference_json(std::string_view text) {
  boost::json::parse_options options;
  options.max_depth = text.size() + 1;
  boost::system::error_code ec;
  auto value = boost::json::parse(text, ec, {}, options);
  if (ec) return std::nullopt;
  return value;
}

}  // namespace rr::fuzz
