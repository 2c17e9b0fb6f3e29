#include "support/text.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <regex>
#include <sstream>

namespace rr::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

std::string input_value(const std::string& html, const std::string& name) {
  std::smatch match;
  if (!std::regex_search(html, match, std::regex("name=\"" + name + "\" value=\"([^\"]*)\""))) return "";
  return match[1];
}

double metric_sample(const std::string& page, const std::string& series, double absent) {
  // A line that starts with the series and goes on with a space: not a longer name that begins
  // with it, nor the same name with other labels.
  for (auto at = page.find(series); at != std::string::npos; at = page.find(series, at + 1)) {
    if ((at == 0 || page[at - 1] == '\n') && page.compare(at + series.size(), 1, " ") == 0) {
      auto value = at + series.size() + 1;
      return std::stod(page.substr(value, page.find('\n', value) - value));
    }
  }
  return absent;
}

rapidjson::Document parse_json_object(const std::string& text) {
  rapidjson::Document document;
  document.Parse(text.data(), text.size());
  BOOST_REQUIRE_MESSAGE(!document.HasParseError() && document.IsObject(), "not a JSON object: " << text);
  return document;
}

}  // namespace rr::test
