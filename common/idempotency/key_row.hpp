// An idempotency_keys row as the workflow sees it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include "common/db/result.hpp"

namespace rr::idempotency {

inline constexpr const char* kStarted = "started";
inline constexpr const char* kFinished = "finished";

struct KeyRow {
  std::int64_t id = 0;
  std::int64_t user_id = 0;
  std::string recovery_point;
  std::string lock_token;      // ours, while we hold the lock
  std::string request_params;  // JSON text as stored (JSONB rendering)
  std::string origin_ip;       // "" when unknown
  std::string payment_idempotency_key;
  // The client's Idempotency-Key, verbatim: the provider calls send it as metadata. Not one of
  // key_row_from's columns: begin_key has it from the request, acquire_key_by_id reads it after them.
  std::string idempotency_key;
  std::optional<int> response_code;
  std::optional<std::string> response_body;
};

// Reads a key row starting at column `first`: id, user_id, recovery_point, lock_token, request_params,
// origin_ip, payment_idempotency_key, response_code, response_body (the result columns of the
// functions in sql/functions/ that return a key).
KeyRow key_row_from(const db::Row& row, int first = 0);
inline constexpr int kKeyRowColumns = 9;

}  // namespace rr::idempotency
