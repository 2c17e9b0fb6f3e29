// Reads the provider's own records: every charge and refund created in a window, paged through
// GET /v1/charges and GET /v1/refunds exactly as Stripe pages (newest first, limit=100,
// starting_after the last id of the page before), and single objects by id. Reconciliation's
// source of truth; it never writes anything at the provider.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/settings.hpp"
#include "common/http/client.hpp"
#include "common/payments/provider_list_page.hpp"

namespace rr::payments {

// The listing could not be read whole: the provider failed, hung past STRIPE_TIMEOUT, refused the
// request or answered something that is not a list. Says which collection, which page and why.
class ListingFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::int64_t kListPageLimit = 100;  // Stripe's maximum

class ProviderListing {
 public:
  explicit ProviderListing(config::PaymentSettings settings);

  // Every charge (refund) created in [created_from, created_to], unix seconds inclusive, newest
  // first. Throws ListingFailed; nothing partial is returned.
  std::vector<ListedCharge> charges(std::int64_t created_from, std::int64_t created_to) const;
  std::vector<ListedRefund> refunds(std::int64_t created_from, std::int64_t created_to) const;
  // GET /v1/charges/{id} (/v1/refunds/{id}): nothing when the provider does not know the id (404).
  // Throws ListingFailed for anything else that is not the object.
  std::optional<ListedCharge> charge(const std::string& id) const;
  std::optional<ListedRefund> refund(const std::string& id) const;

  // Test seam: called after each page arrives ("charges" or "refunds", the page's number from 1),
  // so a test can make the provider fail or hang before the next one.
  std::function<void(std::string_view collection, int page)> after_page;

 private:
  // The body of a 2xx GET of `path_and_query`, or nothing for a 404; throws ListingFailed.
  std::optional<std::string> get(const std::string& path_and_query, const std::string& what) const;
  template <typename Object, typename Read>
  std::vector<Object> all_pages(const char* collection, std::int64_t from, std::int64_t to, Read read) const;

  config::PaymentSettings settings_;
  std::shared_ptr<http::Client> http_;
};

}  // namespace rr::payments
