// The base of the endpoints that read the caller's own rows (GET /rides, GET /rides/{id}): the
// token's form is checked from memory before the endpoint's own validation, and the rows are read
// for the authenticated caller in a short transaction of their own.
#pragma once

#include <utility>

#include "common/api/authenticator.hpp"
#include "common/api/endpoint.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/transaction.hpp"

namespace rr::api {

class CallersRowsEndpoint : public Endpoint {
 public:
  CallersRowsEndpoint(db::ConnectionPool& pool, Authenticator& authenticator)
      : pool_(pool), authenticator_(authenticator) {}

  // 401 for a token that cannot be one of ours, then the endpoint's own validation.
  std::optional<http::Response> answer_in_memory(const http::Request& request,
                                                 const flows::PathArguments& arguments) final {
    require_token_form(request);
    validate(request, arguments);
    return std::nullopt;
  }

 protected:
  // Throws ApiError for what the request gets wrong; needs no I/O.
  virtual void validate(const http::Request& request, const flows::PathArguments& arguments) const = 0;

  // The caller's user: throws ApiError 401 for a token that is not one.
  auth::User caller(const http::Request& request) { return authenticator_.user_of(request); }

  template <typename... Args>
  db::Result read(const db::Statement& statement, Args&&... args) {
    auto conn = pool_.acquire();
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    auto rows = conn.exec(tx, statement, std::forward<Args>(args)...);
    tx.commit();
    return rows;
  }

 private:
  db::ConnectionPool& pool_;
  Authenticator& authenticator_;
};

}  // namespace rr::api
