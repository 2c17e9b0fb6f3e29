// A second JSON reader for the targets to hold ours against: Boost.JSON, which shares no code with
// RapidJSON (compiled in support/boost_sources.cpp). It reads RFC 8259 JSON strictly: no comments,
// no trailing commas, no bytes after the value, UTF-8 checked.
#pragma once

#include <boost/json/error.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string_view>

namespace rr::fuzz {

struct ReferenceReading {
  std::optional<boost::json::value> value;  // nothing when Boost.JSON refuses the text
  boost::system::error_code error;
  // Boost.JSON refuses a number whose exponent leaves its range (1e-400400202712), which RFC 8259
  // leaves to each reader: no verdict on such a text.
  bool undecided() const { return error == boost::json::error::exponent_overflow; }
};

// Nesting as deep as the input can hold (Boost.JSON's default stops at 32 levels, ours does not).
inline ReferenceReading reference_json(std::string_view text) {
  boost::json::parse_options options;
  options.max_depth = text.size() + 1;
  ReferenceReading reading;
  auto value = boost::json::parse(text, reading.error, {}, options);
  if (!reading.error) reading.value = std::move(value);
  return reading;
}

}  // namespace rr::fuzz
