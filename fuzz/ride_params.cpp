// POST /rides's parameter reader (read_ride_params, common/api_requests/): four coordinates from a
// form or JSON body, to the canonical JSON stored on the key (common/rides/ride_params.*).
// Input: the Content-Type on the first line (an empty line: no Content-Type), then the body.
//
// Properties: a refusal is 400, 415 or 422; an accepted body's every coordinate was written by the
// one rule ([-+]digits[.digits], in range) whether it came in a form field, a JSON string or a JSON
// number; the client's texts sent as a form store the same; the stored JSON is canonical (reads back
// with from_json and writes to the same text) and, unless it holds a number in exponent form, reads
// back to itself when sent as a JSON body and when its coordinates are sent as a form.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/api_requests/strict_json.hpp"
#include "common/http/form.hpp"
#include "common/http/message.hpp"
#include "common/rides/ride_params.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"

namespace {

constexpr std::array<std::string_view, 4> kNames = {"origin_lat", "origin_lon", "target_lat", "target_lon"};

// The documented rule, written again here to hold the reader to it.
bool follows_the_number_rule(std::string_view text) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  auto digits = [&] {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > start;
  };
  if (!digits()) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

rr::http::Request request_of(std::string_view content_type, std::string body) {
  rr::http::Request request;
  request.method = "POST";
  request.target = request.path = "/rides";
  if (!content_type.empty()) request.headers.emplace_back("Content-Type", std::string(content_type));
  request.body = std::move(body);
  return request;
}

// The four coordinates' texts as the client sent them (the body was accepted, so it reads).
std::array<std::string, 4> sent_texts(const rr::http::Request& request) {
  std::array<std::string, 4> texts;
  if (rr::api::body_format(request) == rr::api::BodyFormat::form) {
    std::vector<std::pair<std::string, std::string>> fields;
    FUZZ_CHECK(rr::http::form_decode(request.body, fields));
    for (std::size_t i = 0; i < kNames.size(); ++i) {
      for (const auto& [name, value] : fields) {
        if (name == kNames[i]) texts[i] = value;
      }
    }
  } else {
    auto object = rr::api::parse_strict_json_object(request.body);
    for (std::size_t i = 0; i < kNames.size(); ++i) texts[i] = object.find(kNames[i])->text;
  }
  return texts;
}

std::string form_of(const std::array<std::string, 4>& texts) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (std::size_t i = 0; i < kNames.size(); ++i) fields.emplace_back(std::string(kNames[i]), texts[i]);
  return rr::http::form_encode(fields);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  std::string_view content_type = input.line();
  auto request = request_of(content_type, std::string(input.rest()));
  std::string stored;
  try {
    stored = rr::api::read_ride_params(request, {});
  } catch (const rr::api::ApiError& error) {
    FUZZ_CHECK(error.status == 400 || error.status == 415 || error.status == 422);
    FUZZ_CHECK(*error.what() != '\0');
    return 0;
  }

  auto texts = sent_texts(request);
  for (const auto& text : texts) FUZZ_CHECK(follows_the_number_rule(text));

  auto params = rr::rides::from_json(stored);
  FUZZ_CHECK(params.has_value());
  FUZZ_CHECK(rr::rides::to_json(*params) == stored);
  FUZZ_CHECK(rr::rides::valid_latitude(params->origin_lat) && rr::rides::valid_latitude(params->target_lat));
  FUZZ_CHECK(rr::rides::valid_longitude(params->origin_lon) && rr::rides::valid_longitude(params->target_lon));
  auto canonical = rr::rides::canonical_coordinates(stored);
  FUZZ_CHECK(canonical.has_value());

  // Form and JSON meet one rule: the client's own texts, sent as a form, store the same.
  FUZZ_CHECK(rr::api::read_ride_params(request_of("", form_of(texts)), {}) == stored);
  // The stored texts are the shortest that read back, which for a tiny coordinate is exponent form
  // (1e-05) that no client may send; any other stored JSON is a valid body of its own, as JSON and
  // as a form, and reads back to itself.
  std::array<std::string, 4> canonical_texts;
  bool plain = true;
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    canonical_texts[i] = std::string((*canonical)[i]);
    plain = plain && follows_the_number_rule(canonical_texts[i]);
  }
  if (plain) {
    FUZZ_CHECK(rr::api::read_ride_params(request_of("application/json", stored), {}) == stored);
    FUZZ_CHECK(rr::api::read_ride_params(request_of("application/x-www-form-urlencoded", form_of(canonical_texts)),
                                         {}) == stored);
  }
  return 0;
}
