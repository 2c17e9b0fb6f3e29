// The fields of a form a rider page posted (application/x-www-form-urlencoded, as browsers send
// it). A field the pages read must be given once: a repeated one is ambiguous and reads as absent.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/message.hpp"

namespace rr::web {

class PageForm {
 public:
  // Nothing when the body is not form-encoded or is malformed.
  static std::optional<PageForm> parse(const http::Request& request);

  // The field's value when it is given exactly once.
  std::optional<std::string> field(std::string_view name) const;
  // The field's value, or "" when absent or repeated: for redisplaying what the rider entered.
  std::string value_or_empty(std::string_view name) const { return field(name).value_or(""); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace rr::web
