// The stand-in provider's records of Stripe's objects: customers as they were created, and
// charges and refunds in compact records (fixed-size fields and one string of packed text each)
// from which every answer about them is rendered, however many a long run makes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rr::stripe_mock {

// metadata[...] form fields, by key, in key order.
using Metadata = std::vector<std::pair<std::string, std::string>>;

struct Customer {
  std::string id;
  std::string idempotency_key;  // of the request that created it, or empty
  std::int64_t created = 0;
  std::optional<std::string> description;
  std::optional<std::string> email;
  std::optional<std::string> name;
  std::optional<std::string> phone;
  Metadata metadata;
};

// A record's place in its collection: its creation order, which is also its list order.
using ObjectIndex = std::uint32_t;
inline constexpr ObjectIndex kNoObject = UINT32_MAX;

// Stripe's object ids: a prefix ("ch_") and 24 letters and digits. Records keep the 24.
inline constexpr std::size_t kIdLength = 24;
using IdSuffix = std::array<char, kIdLength>;

enum class RefundReason : std::uint8_t { none, duplicate, fraudulent, requested_by_customer };
std::string_view reason_name(RefundReason reason);  // "" for none

// A record's variable-length text in one string (one allocation, no per-field string headers):
// the idempotency key, then the description (charges), then the metadata packed as
// [key length: 1 byte][value length: 2 bytes][key][value] per pair, within Stripe's limits.
class PackedText {
 public:
  PackedText() = default;
  PackedText(std::string_view idempotency_key, const std::optional<std::string>& description, const Metadata& metadata);

  std::string_view idempotency_key() const { return std::string_view(text_).substr(0, key_length_); }
  std::optional<std::string_view> description() const;
  Metadata metadata() const;
  std::size_t size() const { return text_.size(); }

 private:
  std::string text_;
  std::uint32_t description_length_ = 0;
  std::uint16_t key_length_ = 0;  // Idempotency-Key: at most 255
  bool has_description_ = false;
};

struct ChargeRecord {
  IdSuffix id{};
  std::int64_t created = 0;
  std::int32_t amount = 0;  // Stripe's eight digits fit
  std::int32_t amount_refunded = 0;
  std::uint32_t payer = 0;                // the customer, in Ledger's table of charged customers
  ObjectIndex latest_refund = kNoObject;  // then RefundRecord::earlier_refund, newest first
  std::array<char, 3> currency{};         // lower case
  bool succeeded = true;                  // false: declined (status "failed"), never refundable
  PackedText text;                        // idempotency key, description, metadata
};

struct RefundRecord {
  IdSuffix id{};
  std::int64_t created = 0;
  ObjectIndex charge = 0;
  ObjectIndex earlier_refund = kNoObject;  // the previous refund of the same charge
  std::int32_t amount = 0;
  RefundReason reason = RefundReason::none;
  PackedText text;  // idempotency key, metadata
};

// Details Stripe shows on a charge or refund that the ledger does not store but derives from the
// object's id, the same at every rendering: the card ("card_..."), its fingerprint, the balance
// transaction ("txn_...") and the receipt's token. `purpose` tells them apart.
enum class DerivedDetail : std::uint64_t { card = 1, fingerprint = 2, balance_transaction = 3, receipt = 4 };
std::string derived_detail(const IdSuffix& id, DerivedDetail purpose, std::size_t length, std::string_view prefix = "");

}  // namespace rr::stripe_mock
