// How the operator subcommands print: one JSON document on stdout with --json, else aligned
// lines for people. Diagnostics go to stderr as log lines, never into the result.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rr::api {

// A JSON object or array under construction; print() writes it and a newline to stdout.
class JsonOutput {
 public:
  JsonOutput& begin_object(std::string_view key = {});
  JsonOutput& end_object();
  JsonOutput& begin_array(std::string_view key);
  JsonOutput& end_array();
  JsonOutput& field(std::string_view key, std::string_view value);
  JsonOutput& field(std::string_view key, const char* value) { return field(key, std::string_view(value)); }
  JsonOutput& field(std::string_view key, const std::string& value) { return field(key, std::string_view(value)); }
  JsonOutput& field(std::string_view key, const std::optional<std::string>& value);
  JsonOutput& field(std::string_view key, std::int64_t value);
  JsonOutput& field(std::string_view key, int value) { return field(key, static_cast<std::int64_t>(value)); }
  JsonOutput& field(std::string_view key, std::optional<std::int64_t> value);
  JsonOutput& field(std::string_view key, std::optional<int> value);
  // Seconds and other measures, rounded to thousandths.
  JsonOutput& field(std::string_view key, double value);
  JsonOutput& field(std::string_view key, std::optional<double> value);
  JsonOutput& field(std::string_view key, bool value);
  void print();

 private:
  void key(std::string_view key);
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_{buffer_};
};

// Columns padded to their widest cell, two spaces apart, headers first.
void print_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);
// "label   value" lines with the labels padded to the longest.
void print_fields(const std::vector<std::pair<std::string, std::string>>& fields);

// What a terminal may be shown of text from the database: control characters become '?', and
// more than `max_bytes` is cut with "...".
std::string printable(std::string_view text, std::size_t max_bytes = 4096);
// Whole seconds, for people ("612 s").
std::string whole_seconds(double seconds);

}  // namespace rr::api
