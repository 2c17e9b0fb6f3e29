// The stand-in provider's books: every customer, charge and refund it made, kept for as long as
// it runs (Stripe keeps them too), in compact records from which their answers are rendered, in
// creation order for Stripe's lists, and found by id.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/base/string_hash.hpp"
#include "tools/stripe_mock/records.hpp"

namespace rr::stripe_mock {

// What a new charge is made of; the ledger adds its id, time and derived card details.
struct NewCharge {
  std::string_view idempotency_key;
  std::string_view customer;
  std::string_view currency;  // three lower-case letters
  std::optional<std::string> description;
  std::int64_t amount = 0;
  bool succeeded = true;
  Metadata metadata;
};

struct NewRefund {
  std::string_view idempotency_key;
  ObjectIndex charge = 0;
  std::int64_t amount = 0;
  RefundReason reason = RefundReason::none;
  Metadata metadata;
};

class Ledger {
 public:
  explicit Ledger(std::uint64_t seed);

  // Each gives the object its id and takes the time of creation, keeping `created` from going
  // backwards (a clock stepped back must not reorder the lists, which are in creation order).
  ObjectIndex add_customer(Customer customer);  // created: the time of creation
  ObjectIndex add_charge(NewCharge charge, std::int64_t now);
  // Also adds the amount to the charge's amount_refunded and the refund to its list.
  ObjectIndex add_refund(NewRefund refund, std::int64_t now);

  std::optional<ObjectIndex> find_customer(std::string_view id) const;
  std::optional<ObjectIndex> find_charge(std::string_view id) const;
  std::optional<ObjectIndex> find_refund(std::string_view id) const;

  const Customer& customer(ObjectIndex index) const { return customers_[index]; }
  const ChargeRecord& charge(ObjectIndex index) const { return charges_[index]; }
  const RefundRecord& refund(ObjectIndex index) const { return refunds_[index]; }
  std::size_t charge_count() const { return charges_.size(); }
  std::size_t refund_count() const { return refunds_.size(); }

  std::string charge_id(const ChargeRecord& charge) const { return "ch_" + std::string(charge.id.data(), kIdLength); }
  std::string refund_id(const RefundRecord& refund) const { return "re_" + std::string(refund.id.data(), kIdLength); }
  std::string_view payer_id(const ChargeRecord& charge) const { return payers_[charge.payer].id; }

  // The charges of a customer (created here or named by a charge), oldest first; nothing for a
  // customer the ledger never saw.
  std::optional<std::span<const ObjectIndex>> charges_of(std::string_view customer) const;
  // A charge's refunds, oldest first.
  std::vector<ObjectIndex> refunds_of(ObjectIndex charge) const;

  // Forgets everything and starts the ids over from the seed.
  void clear();

 private:
  // A customer named by charges, with them in creation order: the `customer` filter's index.
  struct Payer {
    std::string id;
    std::vector<ObjectIndex> charges;
  };
  // Ids by a hash of their 24 characters. The ledger draws its own ids, so it draws again on the
  // rare hash already taken: every hash then names one record, which a lookup still compares.
  using IdIndex = std::unordered_map<std::uint64_t, ObjectIndex>;

  IdSuffix new_id(const IdIndex& taken);
  static std::optional<ObjectIndex> find(const IdIndex& index, std::string_view id, std::string_view prefix,
                                         const auto& records);
  std::int64_t creation_time(std::int64_t now);

  const std::uint64_t seed_;
  std::mt19937_64 random_;
  std::int64_t latest_created_ = 0;
  // Deques: adding never moves (or copies, for a moment, twice over) what is already there.
  std::deque<Customer> customers_;
  std::deque<ChargeRecord> charges_;
  std::deque<RefundRecord> refunds_;
  std::deque<Payer> payers_;
  StringMap<ObjectIndex> customers_by_id_;
  StringMap<std::uint32_t> payers_by_id_;
  IdIndex charges_by_id_;
  IdIndex refunds_by_id_;
};

}  // namespace rr::stripe_mock
