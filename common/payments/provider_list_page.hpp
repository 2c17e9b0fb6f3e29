// One page of Stripe's list object (GET /v1/charges, GET /v1/refunds) read into the few fields
// reconciliation compares: what was paid or given back, by whom, when, and the metadata our calls
// attach. A page that is not such a list is refused with a message saying what is wrong.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rr::payments {

using ProviderMetadata = std::map<std::string, std::string>;

struct ListedCharge {
  std::string id;
  std::int64_t amount = 0;
  std::string currency;
  std::string customer;      // "" when the charge has none
  std::int64_t created = 0;  // unix seconds
  bool succeeded = false;    // money taken: status "succeeded" (a declined charge is listed too)
  std::int64_t amount_refunded = 0;
  ProviderMetadata metadata;
};

struct ListedRefund {
  std::string id;
  std::string charge;
  std::int64_t amount = 0;
  std::string currency;
  std::int64_t created = 0;
  bool succeeded = false;  // status "succeeded" (or "pending": the money is on its way back)
  ProviderMetadata metadata;
};

template <typename Object>
struct ListPage {
  std::vector<Object> data;  // newest first, as the provider lists
  bool has_more = false;
};

// The provider answered something that is not the list (or object) it should be.
class MalformedListing : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throw MalformedListing.
ListPage<ListedCharge> read_charge_page(std::string_view body);
ListPage<ListedRefund> read_refund_page(std::string_view body);
ListedCharge read_charge(std::string_view body);
ListedRefund read_refund(std::string_view body);

}  // namespace rr::payments
