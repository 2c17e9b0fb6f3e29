// httpwg's structured-field-tests against our sf-string reader and writer, and against the
// Idempotency-Key's reader on top of it. Each file is a JSON array of cases (the format is in the
// suite's README.md): a parse case has `raw` (the field's lines) and either `must_fail` or
// `expected` ([bare item, parameters]); a serialisation case has `expected` and `must_fail` or
// `canonical`. Prints one line per failure, the cases the key's own bounds refuse, then
// passed=N failed=N refused_by_bounds=N; exits 1 on any failure or when no case was read.
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/http/message.hpp"
#include "common/http/structured_string.hpp"

namespace {

struct Tally {
  int passed = 0;
  int failed = 0;
  int refused_by_bounds = 0;
};

std::string text_of(const rapidjson::Value& value) { return {value.GetString(), value.GetStringLength()}; }

// The case's text shown safely on one line: bytes outside printable ASCII as \xNN.
std::string shown(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

// The field value a recipient sees: lines received separately are combined with ", " (RFC 9110
// section 5.3), as the suite's README says a parser is handed them.
std::string field_value(const rapidjson::Value& raw) {
  std::string joined;
  for (const auto& line : raw.GetArray()) {
    if (!joined.empty()) joined += ", ";
    joined += text_of(line);
  }
  return joined;
}

// The expected item as a String without parameters: the only item this reader takes.
std::optional<std::string> expected_string(const rapidjson::Value& expected, std::string& why_not) {
  if (!expected.IsArray() || expected.Size() != 2 || !expected[1].IsArray()) {
    why_not = "expected is not an item ([bare item, parameters])";
    return std::nullopt;
  }
  if (!expected[0].IsString()) {
    why_not = "the expected bare item is not a String";
    return std::nullopt;
  }
  if (!expected[1].Empty()) {
    why_not = "the expected item has parameters, which this reader does not take";
    return std::nullopt;
  }
  return text_of(expected[0]);
}

// The file's name from the suite's folder on, for short lines.
std::string short_name(const std::string& path) {
  auto at = path.rfind("structured-field-tests/");
  return at == std::string::npos ? path : path.substr(at + 23);
}

void fail(Tally& tally, const std::string& file, const std::string& name, const std::string& what) {
  ++tally.failed;
  std::cout << "FAIL " << short_name(file) << ": " << shown(name) << ": " << what << "\n";
}

// What the Idempotency-Key reader makes of a field value that is a valid sf-string: the same text,
// or a refusal by the key's own bounds (length, blank, comma), which is counted, not failed.
void check_key_reader(Tally& tally, const std::string& file, const std::string& name, const std::string& value,
                      const std::string& expected) {
  rr::http::Request request;
  request.headers = {{"Idempotency-Key", value}};
  try {
    std::string key = rr::api::parse_idempotency_key(request);
    if (key != expected) fail(tally, file, name, "the key reader read [" + shown(key) + "]");
  } catch (const rr::api::ApiError& refused) {
    ++tally.refused_by_bounds;
    std::cout << "refused_by_bounds " << short_name(file) << ": " << shown(name) << ": " << refused.what() << "\n";
  }
}

void run_parse_case(Tally& tally, const std::string& file, const rapidjson::Value& test) {
  std::string name = text_of(test["name"]);
  std::string value = field_value(test["raw"]);
  bool must_fail = test.HasMember("must_fail") && test["must_fail"].GetBool();
  bool can_fail = test.HasMember("can_fail") && test["can_fail"].GetBool();
  auto parsed = rr::http::parse_sf_string(value);
  if (must_fail) {
    if (parsed) return fail(tally, file, name, "must fail, parsed as [" + shown(*parsed) + "]");
    ++tally.passed;
    return;
  }
  std::string why_not;
  auto expected = expected_string(test["expected"], why_not);
  if (!expected) return fail(tally, file, name, why_not);
  if (!parsed) {
    if (can_fail) {
      ++tally.passed;
      std::cout << "refused (allowed by can_fail) " << short_name(file) << ": " << shown(name) << "\n";
      return;
    }
    return fail(tally, file, name, "refused, expected [" + shown(*expected) + "]");
  }
  if (*parsed != *expected) return fail(tally, file, name, "parsed as [" + shown(*parsed) + "]");
  // Written back, the value is the canonical form (the raw one unless the case names another).
  std::string canonical = test.HasMember("canonical") ? field_value(test["canonical"]) : value;
  auto written = rr::http::serialize_sf_string(*parsed);
  if (!written || *written != canonical) {
    return fail(tally, file, name, "serialized as [" + shown(written.value_or("(refused)")) + "]");
  }
  ++tally.passed;
  check_key_reader(tally, file, name, value, *expected);
}

// serialisation-tests/: values that must not be written, or are written in a canonical form.
void run_serialisation_case(Tally& tally, const std::string& file, const rapidjson::Value& test) {
  std::string name = text_of(test["name"]);
  bool must_fail = test.HasMember("must_fail") && test["must_fail"].GetBool();
  if (!test["expected"].IsArray() || test["expected"].Size() != 2 || !test["expected"][0].IsString()) {
    return fail(tally, file, name, "the expected bare item is not a String");
  }
  auto written = rr::http::serialize_sf_string(text_of(test["expected"][0]));
  if (must_fail) {
    if (written) return fail(tally, file, name, "must not serialize, wrote [" + shown(*written) + "]");
  } else if (!written || *written != field_value(test["canonical"])) {
    return fail(tally, file, name, "serialized as [" + shown(written.value_or("(refused)")) + "]");
  }
  ++tally.passed;
}

bool run_file(Tally& tally, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  rapidjson::Document cases;
  if (!in.good() && !in.eof()) {
    std::cout << "FAIL cannot read " << path << "\n";
    return false;
  }
  if (cases.Parse(text.data(), text.size()).HasParseError() || !cases.IsArray() || cases.Empty()) {
    std::cout << "FAIL " << path << " is not a JSON array of cases ("
              << rapidjson::GetParseError_En(cases.GetParseError()) << ")\n";
    return false;
  }
  for (const auto& test : cases.GetArray()) {
    if (test.HasMember("raw")) {
      run_parse_case(tally, path, test);
    } else {
      run_serialisation_case(tally, path, test);
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " CASES.json...\n";
    return 2;
  }
  Tally tally;
  bool every_file_read = true;
  for (int i = 1; i < argc; ++i) every_file_read = run_file(tally, argv[i]) && every_file_read;
  std::cout << "passed=" << tally.passed << " failed=" << tally.failed
            << " refused_by_bounds=" << tally.refused_by_bounds << "\n";
  return every_file_read && tally.failed == 0 && tally.passed > 0 ? 0 : 1;
}
