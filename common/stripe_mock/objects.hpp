// The stand-in provider's records of Stripe's objects (customers, charges, refunds) and their
// rendering in Stripe's wire format, with the fields of Stripe's API reference, so clients whose
// types declare those fields (the official libraries) find them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/stripe_mock/json_writer.hpp"

namespace rr::stripe_mock {

// metadata[...] form fields, by key, in key order.
using Metadata = std::vector<std::pair<std::string, std::string>>;

struct Customer {
  std::string id;
  std::int64_t created = 0;
  std::optional<std::string> description;
  std::optional<std::string> email;
  std::optional<std::string> name;
  std::optional<std::string> phone;
  Metadata metadata;
};

struct Refund {
  std::string id;  // re_...
  std::string idempotency_key;
  std::string charge;
  std::int64_t amount = 0;
  std::string currency;
  std::int64_t created = 0;
  std::string balance_transaction;    // txn_...
  std::optional<std::string> reason;  // duplicate, fraudulent, requested_by_customer
  Metadata metadata;
};

struct Charge {
  std::string id;  // ch_...
  std::string idempotency_key;
  std::string customer;
  std::string currency;  // lower case
  std::optional<std::string> description;
  std::int64_t amount = 0;
  std::int64_t amount_refunded = 0;
  std::int64_t created = 0;
  bool succeeded = true;  // false: declined (status "failed"); such a charge is never refundable
  std::string card;       // card_..., the customer's default card it was made on
  std::string fingerprint;
  std::string balance_transaction;  // txn_..., empty when declined
  std::string receipt_token;        // the receipt URL's last part
  Metadata metadata;
  std::vector<const Refund*> refunds;  // oldest first; the records live in the mock's deque

  bool refunded() const { return amount_refunded >= amount; }
};

// Each writes one object, as the value of `name` or (null) as a document or array element.
void write_customer(JsonWriter& json, const Customer& customer, const char* name = nullptr);
void write_charge(JsonWriter& json, const Charge& charge, const char* name = nullptr);
void write_refund(JsonWriter& json, const Refund& refund, const char* name = nullptr);

// The whole object as a response body.
std::string to_json(const Customer& customer);
std::string to_json(const Charge& charge);
std::string to_json(const Refund& refund);

}  // namespace rr::stripe_mock
