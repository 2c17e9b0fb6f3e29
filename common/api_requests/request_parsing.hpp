// Validation of everything a client sends, before any row is written. Pure functions: a unit
// test calls them without a socket or a database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/message.hpp"
#include "common/rides/ride_params.hpp"

namespace rr::api {

inline constexpr std::size_t kMinIdempotencyKeyLength = 20;
inline constexpr std::size_t kMaxIdempotencyKeyLength = 255;  // the schema's CHECK agrees

// The bearer token from `Authorization: Bearer <token>`; throws ApiError 401 when absent/malformed.
std::string parse_bearer_token(const http::Request& request);
// Throws ApiError 401, as the lookup would, for a token that cannot be one of ours: the check the
// I/O thread makes before a worker looks the token up.
void require_token_form(const http::Request& request);
// The Idempotency-Key header, bare (as Stripe's clients send it) or as a quoted Structured Field
// string (as the IETF draft writes it). Throws ApiError 400 when missing, repeated (as two
// headers or a comma-separated list in one), blank (also "" or "  " quoted) or otherwise invalid.
std::string parse_idempotency_key(const http::Request& request);
// The four coordinates from a form-encoded or JSON body, every number under one rule (form
// fields, JSON strings and JSON numbers alike: [-+]digits[.digits]). Throws ApiError 400
// (unreadable body; JSON that is not UTF-8 or repeats a key), 415 (other content types) or 422
// (missing, repeated form field, not a finite decimal number, out of range).
rides::RideParams parse_ride_params(const http::Request& request);
// The two parameter encodings, by Content-Type (form when absent); throws ApiError 415 for others.
enum class BodyFormat { form, json };
BodyFormat body_format(const http::Request& request);

// The registry's readers (common/flows/flow_registry.hpp): a request's parameters as the canonical
// JSON stored on its key. POST /rides: parse_ride_params. POST /rides/{id}/cancel: the ride id from
// the path (404 when it cannot be one) and an optional `reason`, printable text of at most 500
// bytes (422 otherwise; repeated: 422), from a form field or a JSON string (JSON null: no reason;
// a JSON number or anything else: 422).
std::string read_ride_params(const http::Request& request, const std::vector<std::string>& path_arguments);
std::string read_cancel_params(const http::Request& request, const std::vector<std::string>& path_arguments);

// A query parameter's value, decoded; nothing when absent. Throws ApiError 400 when the query
// is malformed or names this parameter more than once.
std::optional<std::string> query_param(const http::Request& request, std::string_view name);

}  // namespace rr::api
