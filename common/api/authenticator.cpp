// Authentication for the endpoints that need the caller's user.
#include "common/api/authenticator.hpp"

#include "common/api/api_error.hpp"
#include "common/api/request_parsing.hpp"

namespace rr::api {

auth::User Authenticator::user_of(const http::Request& request) {
  std::string token = parse_bearer_token(request);
  // A user the cache knows needs no connection, unless this request is the one to renew it.
  if (auto user = auth::cached_user_unless_renewing(tokens_, token)) return *user;
  auto conn = pool_.acquire();
  auto user = auth::authenticate_cached(tokens_, conn, token);
  if (!user) throw ApiError(401, "authentication_error", "The bearer token is not valid.");
  return *user;
}

std::optional<auth::User> Authenticator::cached_user_of(const http::Request& request) {
  return auth::cached_user(tokens_, parse_bearer_token(request));
}

}  // namespace rr::api
