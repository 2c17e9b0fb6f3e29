// Storing, finding and pruning the idempotency keys' entries.
#include "tools/stripe_mock/replay_store.hpp"

#include <functional>

namespace rr::stripe_mock {
namespace {

std::string_view created_under(const Ledger& ledger, Endpoint endpoint, ObjectIndex object) {
  switch (endpoint) {
    case Endpoint::customers:
      return ledger.customer(object).idempotency_key;
    case Endpoint::charges:
      return ledger.charge(object).text.idempotency_key();
    case Endpoint::refunds:
      return ledger.refund(object).text.idempotency_key();
  }
  return {};
}

}  // namespace

std::uint64_t params_digest(const std::vector<std::pair<std::string, std::string>>& sorted_params) {
  // Lengths before contents: "a=bc" and "ab=c" must differ.
  std::string canonical;
  for (const auto& [name, value] : sorted_params) {
    canonical.append(std::to_string(name.size())).append(":").append(name);
    canonical.append(std::to_string(value.size())).append(":").append(value);
  }
  return std::hash<std::string>{}(canonical);
}

std::uint32_t ReplayStore::account_number(std::string_view account) {
  auto found = accounts_.find(account);
  if (found != accounts_.end()) return found->second;
  auto number = static_cast<std::uint32_t>(accounts_.size());
  accounts_.emplace(std::string(account), number);
  return number;
}

std::uint64_t ReplayStore::key_digest(std::uint32_t account, std::string_view key) const {
  return std::hash<std::string_view>{}(key) ^ (static_cast<std::uint64_t>(account) * 0x9e3779b97f4a7c15ULL);
}

const StoredRequest* ReplayStore::find(std::string_view account, std::string_view key, const Ledger& ledger,
                                       std::int64_t now) {
  prune(now);
  auto number = account_number(account);
  auto [begin, end] = by_key_.equal_range(key_digest(number, key));
  for (auto it = begin; it != end; ++it) {
    const Entry& entry = entries_[it->second - first_];
    if (entry.account == number && created_under(ledger, entry.request.endpoint, entry.request.object) == key) {
      return &entry.request;
    }
  }
  return nullptr;
}

void ReplayStore::add(std::string_view account, std::string_view key, const StoredRequest& request, std::int64_t now) {
  prune(now);
  auto number = account_number(account);
  auto digest = key_digest(number, key);
  by_key_.emplace(digest, first_ + entries_.size());
  entries_.push_back(Entry{request, digest, now, number});
  while (entries_.size() > capacity_) drop_oldest();
}

void ReplayStore::prune(std::int64_t now) {
  while (!entries_.empty() && entries_.front().stored_at <= now - kKeyLifetimeSeconds) drop_oldest();
}

void ReplayStore::drop_oldest() {
  auto [begin, end] = by_key_.equal_range(entries_.front().key_digest);
  for (auto it = begin; it != end; ++it) {
    if (it->second == first_) {
      by_key_.erase(it);
      break;
    }
  }
  entries_.pop_front();
  ++first_;
  ++pruned_;
}

void ReplayStore::clear() {
  entries_.clear();
  by_key_.clear();
  accounts_.clear();
  first_ = 0;
  pruned_ = 0;
}

}  // namespace rr::stripe_mock
