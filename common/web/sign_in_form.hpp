// The sign-in page as an answer (GET / signed out, and POST /session's failures): the form with
// its double-submit CSRF token, kept from the rr_csrf cookie when the browser has a valid one (so a
// second tab does not invalidate the first) and set anew otherwise.
#pragma once

#include <optional>
#include <string_view>

#include "common/http/message.hpp"
#include "common/web/session_settings.hpp"

namespace rr::web {

http::Response sign_in_answer(const http::Request& request, const SessionSettings& settings, int status,
                              std::optional<std::string_view> error = std::nullopt);

}  // namespace rr::web
