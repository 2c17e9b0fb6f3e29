// JSON documents and aligned text for the operator subcommands.
#include "api/command_output.hpp"

#include <cmath>
#include <cstdio>

namespace rr::api {

void JsonOutput::key(std::string_view key) {
  if (!key.empty()) writer_.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
}

JsonOutput& JsonOutput::begin_object(std::string_view key) {
  this->key(key);
  writer_.StartObject();
  return *this;
}

JsonOutput& JsonOutput::end_object() {
  writer_.EndObject();
  return *this;
}

JsonOutput& JsonOutput::begin_array(std::string_view key) {
  this->key(key);
  writer_.StartArray();
  return *this;
}

JsonOutput& JsonOutput::end_array() {
  writer_.EndArray();
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, std::string_view value) {
  this->key(key);
  writer_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, const std::optional<std::string>& value) {
  if (value) return field(key, std::string_view(*value));
  this->key(key);
  writer_.Null();
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, std::int64_t value) {
  this->key(key);
  writer_.Int64(value);
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, std::optional<std::int64_t> value) {
  if (value) return field(key, *value);
  this->key(key);
  writer_.Null();
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, std::optional<int> value) {
  if (value) return field(key, static_cast<std::int64_t>(*value));
  this->key(key);
  writer_.Null();
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, double value) {
  this->key(key);
  writer_.Double(std::round(value * 1000.0) / 1000.0);
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, std::optional<double> value) {
  if (value) return field(key, *value);
  this->key(key);
  writer_.Null();
  return *this;
}

JsonOutput& JsonOutput::field(std::string_view key, bool value) {
  this->key(key);
  writer_.Bool(value);
  return *this;
}

void JsonOutput::print() {
  std::fwrite(buffer_.GetString(), 1, buffer_.GetSize(), stdout);
  std::fputc('\n', stdout);
}

void print_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(headers.size());
  for (std::size_t i = 0; i < headers.size(); ++i) widths[i] = headers[i].size();
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      line += cells[i];
      // The last column is not padded, so lines carry no trailing blanks.
      if (i + 1 < cells.size()) line += std::string(widths[i] - cells[i].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  };
  print_row(headers);
  for (const auto& row : rows) print_row(row);
}

void print_fields(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::size_t width = 0;
  for (const auto& [label, value] : fields) width = std::max(width, label.size());
  for (const auto& [label, value] : fields) {
    std::printf("%s%s  %s\n", label.c_str(), std::string(width - label.size(), ' ').c_str(), value.c_str());
  }
}

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes + 3));
  for (char c : text.substr(0, max_bytes)) {
    auto byte = static_cast<unsigned char>(c);
    out.push_back(byte < 0x20 || byte == 0x7f ? '?' : c);
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

std::string whole_seconds(double seconds) {
  return std::to_string(static_cast<std::int64_t>(std::llround(seconds))) + " s";
}

}  // namespace rr::api
