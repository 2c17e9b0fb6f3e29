// Paging through the provider's charges and refunds. A GET is safe to send twice, so the HTTP
// client's one resend on a kept connection the provider closed is harmless here; every other
// failure ends the listing with ListingFailed, and the caller acts on nothing it has not read whole.
#include "common/payments/provider_listing.hpp"

#include "common/http/form.hpp"

namespace rr::payments {

ProviderListing::ProviderListing(config::PaymentSettings settings)
    : settings_(std::move(settings)), http_(std::make_shared<http::Client>(2)) {}

std::optional<std::string> ProviderListing::get(const std::string& path_and_query, const std::string& what) const {
  http::ClientRequest request;
  request.method = "GET";
  request.url = settings_.api_base + path_and_query;
  request.headers = {{"Authorization", "Bearer " + settings_.api_key}, {"Accept", "application/json"}};
  request.timeout = settings_.timeout;
  http::ClientResponse response;
  try {
    response = http_->send(request);
  } catch (const http::TransportError& e) {
    throw ListingFailed(what + ": " + (e.timed_out() ? "provider did not answer within STRIPE_TIMEOUT: " : "") +
                        e.what());
  }
  if (response.status == 404) return std::nullopt;
  if (response.status < 200 || response.status >= 300) {
    throw ListingFailed(what + ": provider answered HTTP " + std::to_string(response.status) + ": " +
                        response.body.substr(0, 300));
  }
  return std::move(response.body);
}

template <typename Object, typename Read>
std::vector<Object> ProviderListing::all_pages(const char* collection, std::int64_t from, std::int64_t to,
                                               Read read) const {
  std::vector<Object> objects;
  std::optional<std::string> starting_after;
  for (int page_number = 1;; ++page_number) {
    std::vector<std::pair<std::string, std::string>> query = {{"created[gte]", std::to_string(from)},
                                                              {"created[lte]", std::to_string(to)},
                                                              {"limit", std::to_string(kListPageLimit)}};
    if (starting_after) query.emplace_back("starting_after", *starting_after);
    std::string what = std::string("listing ") + collection + " page " + std::to_string(page_number);
    auto body = get(std::string("/v1/") + collection + "?" + http::form_encode(query), what);
    if (!body) throw ListingFailed(what + ": provider answered HTTP 404");
    ListPage<Object> page;
    try {
      page = read(*body);
    } catch (const MalformedListing& e) {
      throw ListingFailed(what + ": " + e.what());
    }
    // has_more with an empty page would page forever from the same cursor.
    if (page.has_more && page.data.empty()) throw ListingFailed(what + ": has_more with no objects");
    for (auto& object : page.data) objects.push_back(std::move(object));
    if (after_page) after_page(collection, page_number);
    if (!page.has_more) return objects;
    starting_after = objects.back().id;
  }
}

std::vector<ListedCharge> ProviderListing::charges(std::int64_t created_from, std::int64_t created_to) const {
  return all_pages<ListedCharge>("charges", created_from, created_to, read_charge_page);
}

std::vector<ListedRefund> ProviderListing::refunds(std::int64_t created_from, std::int64_t created_to) const {
  return all_pages<ListedRefund>("refunds", created_from, created_to, read_refund_page);
}

std::optional<ListedCharge> ProviderListing::charge(const std::string& id) const {
  auto body = get("/v1/charges/" + http::form_encode({{"", id}}).substr(1), "reading charge " + id);
  if (!body) return std::nullopt;
  try {
    return read_charge(*body);
  } catch (const MalformedListing& e) {
    throw ListingFailed("reading charge " + id + ": " + e.what());
  }
}

std::optional<ListedRefund> ProviderListing::refund(const std::string& id) const {
  auto body = get("/v1/refunds/" + http::form_encode({{"", id}}).substr(1), "reading refund " + id);
  if (!body) return std::nullopt;
  try {
    return read_refund(*body);
  } catch (const MalformedListing& e) {
    throw ListingFailed("reading refund " + id + ": " + e.what());
  }
}

}  // namespace rr::payments
