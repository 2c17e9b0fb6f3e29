// The sign-in form's answer and its CSRF cookie.
#include "common/web/sign_in_form.hpp"

#include "common/web/cookies.hpp"
#include "common/web/csrf.hpp"
#include "common/web/page_response.hpp"
#include "common/web/pages.hpp"
#include "common/web/session_cookie.hpp"
#include "common/web/session_store.hpp"
#include "common/web/session_token.hpp"

namespace rr::web {

http::Response sign_in_answer(const http::Request& request, const SessionSettings& settings, int status,
                              std::optional<std::string_view> error) {
  auto kept = cookie_value(request, kSignInCsrfCookie);
  bool reuse = kept && looks_like_session_token(*kept);
  std::string csrf_token = reuse ? *kept : new_csrf_token();
  auto response = page(status, sign_in_page(csrf_token, error));
  // The sign-in form's token lives as long as a session would: a form left open that long expires.
  if (!reuse)
    response.with_header("Set-Cookie",
                         set_cookie(kSignInCsrfCookie, csrf_token, {settings.ttl, settings.cookie_secure}));
  // A session cookie that named no live session (expired, ended elsewhere) is dropped.
  if (cookie_value(request, kSessionCookie))
    response.with_header("Set-Cookie", expired_cookie(kSessionCookie, settings));
  return response;
}

}  // namespace rr::web
