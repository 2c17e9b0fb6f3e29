// Reading what the suites get back as text: files, log output, HTML pages, Prometheus pages and
// JSON answers.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <string>

namespace rr::test {

// The whole file, "" when it cannot be read.
std::string read_file(const std::string& path);

// How many times `needle` occurs in `text`, occurrences not overlapping.
std::size_t count_of(const std::string& text, const std::string& needle);

// The value attribute of the HTML input named `name` ("" when there is none).
std::string input_value(const std::string& html, const std::string& name);

// The value of `series` (a metric name with its labels, as the page writes them) on a Prometheus
// text page; `absent` when no line holds it. The default, -1, is no counter's value, so that a
// misspelled series fails a check for 0 instead of passing it.
double metric_sample(const std::string& page, const std::string& series, double absent = -1);

// `text` parsed as a JSON object; fails the test (with the text) when it is not one.
rapidjson::Document parse_json_object(const std::string& text);

}  // namespace rr::test
