// The stand-in provider's memory of idempotency keys: for each key's first request that did
// something, what it takes to answer it again byte for byte (the endpoint, the object it made, its
// status and request id), never the answer itself. Stripe prunes keys once they are 24 hours old;
// so does this store, and it also keeps at most `capacity` of them, dropping the oldest first,
// so that a long run's memory stays bounded. A request with a pruned key is a new request.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/base/string_hash.hpp"
#include "tools/stripe_mock/ledger.hpp"

namespace rr::stripe_mock {

enum class Endpoint : std::uint8_t { customers, charges, refunds };

inline constexpr std::int64_t kKeyLifetimeSeconds = 24 * 60 * 60;
inline constexpr std::size_t kRequestIdLength = 14;  // after "req_"

// What a key's first request did.
struct StoredRequest {
  Endpoint endpoint = Endpoint::charges;
  std::uint16_t status = 200;  // or 402: a decline, whose failed charge is `object`
  ObjectIndex object = kNoObject;
  std::uint64_t params_digest = 0;  // params_digest() of its parameters
  std::array<char, kRequestIdLength> request_id{};
};

// A digest of the request's parameters (decoded, sorted): a key reused with other parameters is
// refused. 64 bits: two parameter sets of one key meet in it once in 2^64.
std::uint64_t params_digest(const std::vector<std::pair<std::string, std::string>>& sorted_params);

class ReplayStore {
 public:
  explicit ReplayStore(std::size_t capacity) : capacity_(capacity) {}

  // The request stored under this key of this account (Stripe scopes keys to the account the API
  // key stands for), or null. Entries older than 24 hours at `now` are pruned first.
  const StoredRequest* find(std::string_view account, std::string_view key, const Ledger& ledger, std::int64_t now);
  // Stores a key's first request that did something; prunes the oldest beyond the capacity.
  void add(std::string_view account, std::string_view key, const StoredRequest& request, std::int64_t now);

  std::size_t size() const { return entries_.size(); }
  std::int64_t pruned() const { return pruned_; }
  void clear();

 private:
  struct Entry {
    StoredRequest request;
    std::uint64_t key_digest = 0;
    std::int64_t stored_at = 0;
    std::uint32_t account = 0;
  };

  std::uint32_t account_number(std::string_view account);
  std::uint64_t key_digest(std::uint32_t account, std::string_view key) const;
  void prune(std::int64_t now);
  void drop_oldest();

  const std::size_t capacity_;
  // Oldest first; entry number n (counted from the first ever stored) is entries_[n - first_].
  std::deque<Entry> entries_;
  std::uint64_t first_ = 0;
  // Key digest to entry number. A multimap: two keys may share a digest, and a lookup compares
  // the key that the stored object was created under (the ledger keeps it) with the one asked for.
  std::unordered_multimap<std::uint64_t, std::uint64_t> by_key_;
  StringMap<std::uint32_t> accounts_;
  std::int64_t pruned_ = 0;
};

}  // namespace rr::stripe_mock
