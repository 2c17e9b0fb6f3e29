// Row mapping for idempotency_keys.
#include "common/idempotency/key_row.hpp"

namespace rr::idempotency {

KeyRow key_row_from(const db::Row& row, int first) {
  KeyRow key;
  key.id = row[first + 0].as<std::int64_t>();
  key.user_id = row[first + 1].as<std::int64_t>();
  key.recovery_point = row[first + 2].as<std::string>();
  key.lock_token = row[first + 3].is_null() ? "" : row[first + 3].as<std::string>();
  key.request_params = row[first + 4].as<std::string>();
  key.origin_ip = row[first + 5].as<std::string>();
  key.payment_idempotency_key = row[first + 6].as<std::string>();
  if (!row[first + 7].is_null()) key.response_code = row[first + 7].as<int>();
  if (!row[first + 8].is_null()) key.response_body = row[first + 8].as<std::string>();
  return key;
}

}  // namespace rr::idempotency
