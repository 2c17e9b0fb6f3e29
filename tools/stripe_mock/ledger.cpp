// The ledger's records, ids and indexes.
#include "tools/stripe_mock/ledger.hpp"

#include <algorithm>
#include <functional>

namespace rr::stripe_mock {
namespace {

constexpr char kLedgerIdAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

std::uint64_t id_hash(std::string_view suffix) { return std::hash<std::string_view>{}(suffix); }

std::string_view view(const IdSuffix& id) { return std::string_view(id.data(), id.size()); }

}  // namespace

Ledger::Ledger(std::uint64_t seed) : seed_(seed), random_(seed) {}

std::int64_t Ledger::creation_time(std::int64_t now) {
  latest_created_ = std::max(latest_created_, now);
  return latest_created_;
}

IdSuffix Ledger::new_id(const IdIndex& taken) {
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kLedgerIdAlphabet - 2);
  IdSuffix id;
  do {
    for (char& c : id) c = kLedgerIdAlphabet[pick(random_)];
  } while (taken.contains(id_hash(view(id))));
  return id;
}

ObjectIndex Ledger::add_customer(Customer customer) {
  // Stripe's customer ids are shorter: "cus_" and 14 letters and digits.
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kLedgerIdAlphabet - 2);
  customer.id = "cus_";
  for (int i = 0; i < 14; ++i) customer.id += kLedgerIdAlphabet[pick(random_)];
  customer.created = creation_time(customer.created);
  auto index = static_cast<ObjectIndex>(customers_.size());
  customers_by_id_.emplace(customer.id, index);
  customers_.push_back(std::move(customer));
  return index;
}

ObjectIndex Ledger::add_charge(NewCharge charge, std::int64_t now) {
  auto index = static_cast<ObjectIndex>(charges_.size());
  auto payer = payers_by_id_.find(charge.customer);
  if (payer == payers_by_id_.end()) {
    payer = payers_by_id_.emplace(std::string(charge.customer), static_cast<std::uint32_t>(payers_.size())).first;
    payers_.push_back(Payer{std::string(charge.customer), {}});
  }
  payers_[payer->second].charges.push_back(index);

  ChargeRecord& record = charges_.emplace_back();
  record.id = new_id(charges_by_id_);
  record.created = creation_time(now);
  record.amount = static_cast<std::int32_t>(charge.amount);
  record.payer = payer->second;
  std::copy_n(charge.currency.begin(), std::min(charge.currency.size(), record.currency.size()),
              record.currency.begin());
  record.succeeded = charge.succeeded;
  record.text = PackedText(charge.idempotency_key, charge.description, charge.metadata);
  charges_by_id_.emplace(id_hash(view(record.id)), index);
  return index;
}

ObjectIndex Ledger::add_refund(NewRefund refund, std::int64_t now) {
  auto index = static_cast<ObjectIndex>(refunds_.size());
  ChargeRecord& charge = charges_[refund.charge];
  RefundRecord& record = refunds_.emplace_back();
  record.id = new_id(refunds_by_id_);
  record.created = creation_time(now);
  record.charge = refund.charge;
  record.earlier_refund = charge.latest_refund;
  record.amount = static_cast<std::int32_t>(refund.amount);
  record.reason = refund.reason;
  record.text = PackedText(refund.idempotency_key, std::nullopt, refund.metadata);
  refunds_by_id_.emplace(id_hash(view(record.id)), index);
  charge.latest_refund = index;
  charge.amount_refunded += record.amount;
  return index;
}

std::optional<ObjectIndex> Ledger::find(const IdIndex& index, std::string_view id, std::string_view prefix,
                                        const auto& records) {
  if (id.size() != prefix.size() + kIdLength || !id.starts_with(prefix)) return std::nullopt;
  auto suffix = id.substr(prefix.size());
  auto found = index.find(id_hash(suffix));
  if (found == index.end() || view(records[found->second].id) != suffix) return std::nullopt;
  return found->second;
}

std::optional<ObjectIndex> Ledger::find_customer(std::string_view id) const {
  auto found = customers_by_id_.find(id);
  if (found == customers_by_id_.end()) return std::nullopt;
  return found->second;
}

std::optional<ObjectIndex> Ledger::find_charge(std::string_view id) const {
  return find(charges_by_id_, id, "ch_", charges_);
}

std::optional<ObjectIndex> Ledger::find_refund(std::string_view id) const {
  return find(refunds_by_id_, id, "re_", refunds_);
}

std::optional<std::span<const ObjectIndex>> Ledger::charges_of(std::string_view customer) const {
  auto payer = payers_by_id_.find(customer);
  if (payer != payers_by_id_.end()) return std::span<const ObjectIndex>(payers_[payer->second].charges);
  if (customers_by_id_.contains(customer)) return std::span<const ObjectIndex>();
  return std::nullopt;
}

std::vector<ObjectIndex> Ledger::refunds_of(ObjectIndex charge) const {
  std::vector<ObjectIndex> refunds;
  for (auto refund = charges_[charge].latest_refund; refund != kNoObject; refund = refunds_[refund].earlier_refund) {
    refunds.push_back(refund);
  }
  std::reverse(refunds.begin(), refunds.end());
  return refunds;
}

void Ledger::clear() {
  customers_.clear();
  charges_.clear();
  refunds_.clear();
  payers_.clear();
  customers_by_id_.clear();
  payers_by_id_.clear();
  charges_by_id_.clear();
  refunds_by_id_.clear();
  random_.seed(seed_);
  latest_created_ = 0;
}

}  // namespace rr::stripe_mock
