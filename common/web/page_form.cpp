// Form bodies of the rider pages, on the shared form codec (common/http/form.hpp).
#include "common/web/page_form.hpp"

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/http/form.hpp"

namespace rr::web {

std::optional<PageForm> PageForm::parse(const http::Request& request) {
  try {
    if (api::body_format(request) != api::BodyFormat::form) return std::nullopt;
  } catch (const api::ApiError&) {
    return std::nullopt;  // neither form nor JSON
  }
  PageForm form;
  if (!http::form_decode(request.body, form.fields_)) return std::nullopt;
  return form;
}

std::optional<std::string> PageForm::field(std::string_view name) const {
  std::optional<std::string> found;
  for (const auto& [key, value] : fields_) {
    if (key != name) continue;
    if (found) return std::nullopt;
    found = value;
  }
  return found;
}

}  // namespace rr::web
