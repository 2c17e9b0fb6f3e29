// Authentication for the endpoints that need the caller's user.
#include "common/api/authenticator.hpp"

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"

namespace rr::api {

auth::User Authenticator::user_of(const http::Request& request) {
  std::string token = parse_bearer_token(request);
  // A user the cache knows needs no connection, unless this request is the one to renew it.
  if (auto user = auth::cached_user_unless_renewing(tokens_, token)) return *user;
  // A token the cache knows is proven (this request only renews it): never throttled.
  if (!auth::cached_user(tokens_, token)) {
    if (auto seconds = failures_.retry_after(request.remote_address)) {
      throw ApiError(429, "rate_limit_error", "Too many failed authentications from this address; try again later.",
                     *seconds);
    }
  }
  auto conn = pool_.acquire();
  auto user = auth::authenticate_cached(tokens_, conn, token);
  if (!user) {
    failures_.record_failure(request.remote_address);
    throw ApiError(401, "authentication_error", "The bearer token is not valid.");
  }
  return *user;
}

std::optional<auth::User> Authenticator::cached_user_of(const http::Request& request) {
  return auth::cached_user(tokens_, parse_bearer_token(request));
}

}  // namespace rr::api
