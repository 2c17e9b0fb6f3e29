// Signing out.
#include "common/web/sign_out_endpoint.hpp"

#include "common/web/csrf.hpp"
#include "common/web/page_boundary.hpp"
#include "common/web/page_form.hpp"
#include "common/web/page_response.hpp"
#include "common/web/pages.hpp"
#include "common/web/session_cookie.hpp"

namespace rr::web {

http::Response SignOutEndpoint::handle(const http::Request& request, const flows::PathArguments&) {
  return within_page_boundary([&] {
    const auto& settings = sessions_.settings();
    if (auto found = lookup_.of(request)) {
      auto form = PageForm::parse(request);
      if (!form || !csrf_matches(found->session.csrf_token, form->value_or_empty("csrf_token"))) {
        return page(403, message_page("Forbidden", "This form has expired. Reload the page and try again."));
      }
      sessions_.end(found->token);
    }
    auto response = see_other("/");
    response.with_header("Set-Cookie", expired_cookie(kSessionCookie, settings));
    return response;
  });
}

}  // namespace rr::web
