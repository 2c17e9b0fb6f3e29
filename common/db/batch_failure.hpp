// What a coalesced batch's failure means for the requests it carried (common/db/coalesced_calls.hpp):
// whether running them again one by one can help, or would only multiply the load on a database
// that is already failing, or repeat a bug once per request.
#pragma once

#include <exception>

namespace rr::db {

enum class BatchFailure {
  // PostgreSQL refused a row (SQLSTATE classes 22 data and 23 integrity): one request's data is
  // at fault, and the batch statement cannot say whose. Each request runs its single call once.
  member_refused,
  // The database or the way to it is failing (db::outage_message: a lost connection, an exhausted
  // pool, a statement timeout, a shutdown, a server out of resources): a second try per request
  // would only add load. Every request answers as an outage (503, retry with the same key).
  outage,
  // A serialization failure or a deadlock: the batch as a whole lost a race, and its requests
  // are retried together by whoever retries such conflicts (the phase runner), not one by one.
  conflict,
  // Anything else: a wrong call (SQLSTATE class 42, an argument count), an answer the caller
  // cannot read, an error nobody classified. A bug: one log line, every request a 500, no retry.
  programming_error,
};

BatchFailure classify_batch_failure(const std::exception& error);

}  // namespace rr::db
