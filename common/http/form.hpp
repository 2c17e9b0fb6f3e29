// application/x-www-form-urlencoded, both ways (Boost.URL does the percent-encoding): what the
// Stripe-compatible provider speaks and what riders' browsers post.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rr::http {

// Percent-encodes every byte but ALPHA, DIGIT and -._~; a space becomes '+'.
std::string form_encode(const std::vector<std::pair<std::string, std::string>>& fields);
// Parses a form body or a query string; '+' is a space. False on a malformed percent-escape.
// Empty pieces ("a=1&&b=2", a trailing '&') are skipped; a name without '=' has an empty value.
bool form_decode(std::string_view body, std::vector<std::pair<std::string, std::string>>& out);

}  // namespace rr::http
