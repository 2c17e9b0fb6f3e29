// Reading a list request's query string, in Stripe's words for each refusal.
#include "tools/stripe_mock/list_query.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "common/config/environment.hpp"
#include "common/http/form.hpp"
#include "tools/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

constexpr std::array<std::string_view, 4> kCreatedBounds = {"created[gt]", "created[gte]", "created[lt]",
                                                            "created[lte]"};

http::Response invalid_integer(std::string_view name, std::string_view text) {
  return stripe_error(400, "invalid_request_error", "Invalid integer: " + std::string(text),
                      {.code = "parameter_invalid_integer", .param = name});
}

http::Response empty_value(std::string_view name) {
  // Appended, not added up with operator+: GCC 12 at -O2 warns (-Wrestrict) about the latter.
  std::string quoted;
  quoted.append("'").append(name).append("'");
  std::string message;
  message.append("You passed an empty string for ")
      .append(quoted)
      .append(". We assume empty values are an attempt to unset a parameter; however ")
      .append(quoted)
      .append(" cannot be unset. You should remove ")
      .append(quoted)
      .append(" from your request or supply a non-empty value.");
  return stripe_error(400, "invalid_request_error", message, {.code = "parameter_invalid_empty", .param = name});
}

// The value of the last field of this name, if any was sent.
const std::string* last(const std::vector<std::pair<std::string, std::string>>& fields, std::string_view name) {
  const std::string* value = nullptr;
  for (const auto& [field, text] : fields) {
    if (field == name) value = &text;
  }
  return value;
}

// a + 1 and a - 1 without overflow: a bound beyond the integers leaves nothing to list.
std::int64_t after(std::int64_t value) { return value == std::numeric_limits<std::int64_t>::max() ? value : value + 1; }
std::int64_t before(std::int64_t value) {
  return value == std::numeric_limits<std::int64_t>::min() ? value : value - 1;
}

}  // namespace

std::variant<ListQuery, http::Response> parse_list_query(std::string_view query, std::string_view owner_filter) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (!http::form_decode(query, fields)) {
    return stripe_error(400, "invalid_request_error",
                        "Invalid query string: expected application/x-www-form-urlencoded parameters.");
  }
  for (const auto& [name, value] : fields) {
    bool known = name == "limit" || name == "starting_after" || name == "ending_before" || name == "created" ||
                 name == owner_filter ||
                 std::find(kCreatedBounds.begin(), kCreatedBounds.end(), name) != kCreatedBounds.end();
    if (!known) {
      return stripe_error(400, "invalid_request_error", "Received unknown parameter: " + name,
                          {.code = "parameter_unknown", .param = name});
    }
    if (value.empty()) return empty_value(name);
  }

  ListQuery result;
  if (const auto* limit = last(fields, "limit")) {
    auto value = config::parse_integer(*limit);
    if (!value) return invalid_integer("limit", *limit);
    if (*value < 1) {
      return stripe_error(400, "invalid_request_error", "This value must be greater than or equal to 1.",
                          {.code = "parameter_invalid_integer", .param = "limit"});
    }
    if (*value > kMaxListLimit) {
      return stripe_error(400, "invalid_request_error",
                          "This value must be less than or equal to " + std::to_string(kMaxListLimit) + ".",
                          {.code = "parameter_invalid_integer", .param = "limit"});
    }
    result.limit = *value;
  }
  if (const auto* cursor = last(fields, "starting_after")) result.starting_after = *cursor;
  if (const auto* cursor = last(fields, "ending_before")) result.ending_before = *cursor;
  if (const auto* owner = last(fields, owner_filter)) result.owner = *owner;

  // created=T is the one second T; created[gt]=... and the rest bound a range. Not both: in
  // Stripe's form encoding created is then a value and a hash at once.
  const auto* exactly = last(fields, "created");
  for (auto bound : kCreatedBounds) {
    const auto* text = last(fields, bound);
    if (!text) continue;
    if (exactly) {
      return stripe_error(400, "invalid_request_error",
                          "Received both created and " + std::string(bound) +
                              " parameters. Please pass in either an integer or a hash of gt, gte, lt and lte.",
                          {.param = "created"});
    }
    auto value = config::parse_integer(*text);
    if (!value) return invalid_integer(bound, *text);
    if (bound == "created[gt]") result.created_from = std::max(result.created_from, after(*value));
    if (bound == "created[gte]") result.created_from = std::max(result.created_from, *value);
    if (bound == "created[lt]") result.created_to = std::min(result.created_to, before(*value));
    if (bound == "created[lte]") result.created_to = std::min(result.created_to, *value);
  }
  if (exactly) {
    auto value = config::parse_integer(*exactly);
    if (!value) return invalid_integer("created", *exactly);
    result.created_from = result.created_to = *value;
  }
  return result;
}

}  // namespace rr::stripe_mock
