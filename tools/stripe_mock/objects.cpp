// Stripe's customer, charge and refund objects as its API reference lists their fields (API
// version 2024-06-20 and later), with the values a test-mode card charge has: every charge is
// made on a Visa ending 4242 that the stand-in pretends is the customer's default card. What the
// records do not keep (the card, its fingerprint, balance transactions, receipt) derives from the
// object's id, the same at every rendering.
#include "tools/stripe_mock/objects.hpp"

namespace rr::stripe_mock {
namespace {

void write_metadata(JsonWriter& json, const Metadata& metadata) {
  json.begin_object("metadata");
  for (const auto& [key, value] : metadata) json.string(key.c_str(), value);
  json.end_object();
}

void write_address(JsonWriter& json) {
  json.begin_object("address");
  for (const char* field : {"city", "country", "line1", "line2", "postal_code", "state"}) json.null(field);
  json.end_object();
}

// What the card network and Stripe's risk checks said, as Stripe reports it for test cards.
void write_outcome(JsonWriter& json, bool succeeded) {
  json.begin_object("outcome");
  if (succeeded) {
    json.string("network_status", "approved_by_network")
        .null("reason")
        .string("risk_level", "normal")
        .integer("risk_score", 32)
        .string("seller_message", "Payment complete.")
        .string("type", "authorized");
  } else {
    json.string("network_status", "declined_by_network")
        .string("reason", "generic_decline")
        .string("risk_level", "normal")
        .integer("risk_score", 32)
        .string("seller_message", "The bank did not return any further details with this decline.")
        .string("type", "issuer_declined");
  }
  json.end_object();
}

constexpr std::int64_t kCardExpMonth = 12;
constexpr std::int64_t kCardExpYear = 2034;

void write_payment_method_details(JsonWriter& json, const ChargeRecord& charge, const std::string& fingerprint) {
  json.begin_object("payment_method_details").begin_object("card");
  json.integer("amount_authorized", charge.succeeded ? charge.amount : 0).string("brand", "visa");
  json.begin_object("checks")
      .null("address_line1_check")
      .null("address_postal_code_check")
      .string("cvc_check", "pass")
      .end_object();
  json.string("country", "US")
      .integer("exp_month", kCardExpMonth)
      .integer("exp_year", kCardExpYear)
      .string("fingerprint", fingerprint)
      .string("funding", "credit")
      .null("installments")
      .string("last4", "4242")
      .null("mandate")
      .string("network", "visa")
      .null("three_d_secure")
      .null("wallet");
  json.end_object().string("type", "card").end_object();
}

// The legacy `source` field: the card object the charge was made on.
void write_source(JsonWriter& json, const std::string& card, std::string_view customer,
                  const std::string& fingerprint) {
  json.begin_object("source").string("id", card).string("object", "card");
  for (const char* field : {"address_city", "address_country", "address_line1", "address_line1_check", "address_line2",
                            "address_state", "address_zip", "address_zip_check"}) {
    json.null(field);
  }
  json.string("brand", "Visa")
      .string("country", "US")
      .string("customer", customer)
      .string("cvc_check", "pass")
      .null("dynamic_last4")
      .integer("exp_month", kCardExpMonth)
      .integer("exp_year", kCardExpYear)
      .string("fingerprint", fingerprint)
      .string("funding", "credit")
      .string("last4", "4242")
      .begin_object("metadata")
      .end_object()
      .null("name")
      .null("tokenization_method");
  json.end_object();
}

// The refunds as they are `moment` (none yet when the charge was created).
void write_refund_list(JsonWriter& json, const Ledger& ledger, const ChargeRecord& charge, const std::string& id,
                       ChargeMoment moment) {
  json.begin_object("refunds").string("object", "list").begin_array("data");
  std::int64_t count = 0;
  if (moment == ChargeMoment::now) {
    // Stripe lists newest first, the order in which a charge's refunds are chained.
    for (auto refund = charge.latest_refund; refund != kNoObject; refund = ledger.refund(refund).earlier_refund) {
      write_refund(json, ledger, refund);
      ++count;
    }
  }
  json.end_array()
      .boolean("has_more", false)
      .integer("total_count", count)
      .string("url", "/v1/charges/" + id + "/refunds");
  json.end_object();
}

}  // namespace

void write_customer(JsonWriter& json, const Customer& customer, const char* name) {
  json.begin_object(name).string("id", customer.id).string("object", "customer");
  json.null("address")
      .integer("balance", 0)
      .integer("created", customer.created)
      .null("currency")
      .null("default_source")
      .boolean("delinquent", false)
      .optional_string("description", customer.description)
      .null("discount")
      .optional_string("email", customer.email)
      .string("invoice_prefix", customer.id.substr(4, 8));
  json.begin_object("invoice_settings")
      .null("custom_fields")
      .null("default_payment_method")
      .null("footer")
      .null("rendering_options")
      .end_object();
  json.boolean("livemode", false);
  write_metadata(json, customer.metadata);
  json.optional_string("name", customer.name)
      .integer("next_invoice_sequence", 1)
      .optional_string("phone", customer.phone)
      .begin_array("preferred_locales")
      .end_array()
      .null("shipping")
      .string("tax_exempt", "none")
      .null("test_clock");
  json.end_object();
}

void write_charge(JsonWriter& json, const Ledger& ledger, ObjectIndex index, ChargeMoment moment, const char* name) {
  const ChargeRecord& charge = ledger.charge(index);
  std::string id = ledger.charge_id(charge);
  std::string card = derived_detail(charge.id, DerivedDetail::card, kIdLength, "card_");
  std::string fingerprint = derived_detail(charge.id, DerivedDetail::fingerprint, 16);
  std::string_view customer = ledger.payer_id(charge);
  std::int64_t amount_refunded = moment == ChargeMoment::now ? charge.amount_refunded : 0;
  json.begin_object(name).string("id", id).string("object", "charge");
  json.integer("amount", charge.amount)
      .integer("amount_captured", charge.succeeded ? charge.amount : 0)
      .integer("amount_refunded", amount_refunded)
      .null("application")
      .null("application_fee")
      .null("application_fee_amount")
      .optional_string("balance_transaction",
                       charge.succeeded ? std::optional(derived_detail(charge.id, DerivedDetail::balance_transaction,
                                                                       kIdLength, "txn_"))
                                        : std::nullopt);
  json.begin_object("billing_details");
  write_address(json);
  json.null("email").null("name").null("phone").end_object();
  json.string("calculated_statement_descriptor", "ROCKET RIDES")
      .boolean("captured", charge.succeeded)
      .integer("created", charge.created)
      .string("currency", std::string_view(charge.currency.data(), charge.currency.size()))
      .string("customer", customer)
      .optional_string("description", charge.text.description())
      .null("destination")
      .null("dispute")
      .boolean("disputed", false)
      .null("failure_balance_transaction")
      .optional_string("failure_code", charge.succeeded ? std::nullopt : std::optional<std::string>("card_declined"))
      .optional_string("failure_message",
                       charge.succeeded ? std::nullopt : std::optional<std::string>("Your card was declined."))
      .begin_object("fraud_details")
      .end_object()
      .boolean("livemode", false);
  write_metadata(json, charge.text.metadata());
  json.null("on_behalf_of");
  write_outcome(json, charge.succeeded);
  json.boolean("paid", charge.succeeded).null("payment_intent").string("payment_method", card);
  write_payment_method_details(json, charge, fingerprint);
  json.null("receipt_email")
      .null("receipt_number")
      .string("receipt_url",
              derived_detail(charge.id, DerivedDetail::receipt, 40, "https://pay.stripe.com/receipts/payment/"))
      .boolean("refunded", charge.succeeded && amount_refunded >= charge.amount);
  write_refund_list(json, ledger, charge, id, moment);
  json.null("review").null("shipping");
  write_source(json, card, customer, fingerprint);
  json.null("source_transfer")
      .null("statement_descriptor")
      .null("statement_descriptor_suffix")
      .string("status", charge.succeeded ? "succeeded" : "failed")
      .null("transfer_data")
      .null("transfer_group");
  json.end_object();
}

void write_refund(JsonWriter& json, const Ledger& ledger, ObjectIndex index, const char* name) {
  const RefundRecord& refund = ledger.refund(index);
  const ChargeRecord& charge = ledger.charge(refund.charge);
  json.begin_object(name).string("id", ledger.refund_id(refund)).string("object", "refund");
  json.integer("amount", refund.amount)
      .string("balance_transaction", derived_detail(refund.id, DerivedDetail::balance_transaction, kIdLength, "txn_"))
      .string("charge", ledger.charge_id(charge))
      .integer("created", refund.created)
      .string("currency", std::string_view(charge.currency.data(), charge.currency.size()));
  json.begin_object("destination_details")
      .begin_object("card")
      .null("reference")
      .string("reference_status", "pending")
      .string("reference_type", "acquirer_reference_number")
      .string("type", "refund")
      .end_object()
      .string("type", "card")
      .end_object();
  write_metadata(json, refund.text.metadata());
  auto reason = reason_name(refund.reason);
  json.null("payment_intent")
      .optional_string("reason", reason.empty() ? std::nullopt : std::optional(reason))
      .null("receipt_number")
      .null("source_transfer_reversal")
      .string("status", "succeeded")
      .null("transfer_reversal");
  json.end_object();
}

std::string customer_json(const Customer& customer) {
  JsonWriter json;
  write_customer(json, customer);
  return json.text();
}

std::string charge_json(const Ledger& ledger, ObjectIndex charge, ChargeMoment moment) {
  JsonWriter json;
  write_charge(json, ledger, charge, moment);
  return json.text();
}

std::string refund_json(const Ledger& ledger, ObjectIndex refund) {
  JsonWriter json;
  write_refund(json, ledger, refund);
  return json.text();
}

}  // namespace rr::stripe_mock
