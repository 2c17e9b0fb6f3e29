// Header lookup helpers for the plain HTTP values, and a deferral that keeps what its request took.
#include "common/http/message.hpp"

namespace rr::http {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::optional<std::string_view> find_header(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::optional<std::string_view> Request::header(std::string_view name) const { return find_header(headers, name); }

Response keeping_while_parked(Response response, std::shared_ptr<const void> admission) {
  if (!response.deferral || !admission || response.deferral->admission == admission) return response;
  auto kept = std::make_shared<Deferral>(*response.deferral);
  kept->admission = std::move(admission);
  response.deferral = std::move(kept);
  return response;
}

bool Request::has_repeated_header(std::string_view name) const {
  int count = 0;
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) ++count;
  }
  return count > 1;
}

}  // namespace rr::http
