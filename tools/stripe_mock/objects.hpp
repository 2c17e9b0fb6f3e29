// Stripe's customer, charge and refund objects in its wire format, rendered from the ledger's
// records with the fields of Stripe's API reference, so clients whose types declare those fields
// (the official libraries) find them.
#pragma once

#include <string>

#include "tools/stripe_mock/json_writer.hpp"
#include "tools/stripe_mock/ledger.hpp"

namespace rr::stripe_mock {

// A charge as it is now, or as it was when created: the answer a replay of its idempotency key
// gives, byte for byte the first one (nothing refunded yet), as Stripe replays a stored answer.
enum class ChargeMoment { now, as_created };

// Each writes one object, as the value of `name` or (null) as a document or array element.
void write_customer(JsonWriter& json, const Customer& customer, const char* name = nullptr);
void write_charge(JsonWriter& json, const Ledger& ledger, ObjectIndex charge, ChargeMoment moment,
                  const char* name = nullptr);
void write_refund(JsonWriter& json, const Ledger& ledger, ObjectIndex refund, const char* name = nullptr);

// The whole object as a response body.
std::string customer_json(const Customer& customer);
std::string charge_json(const Ledger& ledger, ObjectIndex charge, ChargeMoment moment);
std::string refund_json(const Ledger& ledger, ObjectIndex refund);

}  // namespace rr::stripe_mock
