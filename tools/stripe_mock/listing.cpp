// GET /v1/charges and GET /v1/refunds: Stripe's list object over the ledger, newest first. The
// ledger keeps each collection in creation order, `created` never going backwards, so a list is a
// range of record indexes read backwards: ties in `created` fall in creation order and a cursor
// is a place in that order, so paging never skips or repeats an object.
#include <algorithm>
#include <boost/iterator/counting_iterator.hpp>
#include <cstddef>
#include <utility>

#include "tools/stripe_mock/mock.hpp"
#include "tools/stripe_mock/objects.hpp"
#include "tools/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

struct Page {
  std::vector<ObjectIndex> newest_first;
  bool has_more = false;
};

// `first`..`last`: record indexes, ascending (oldest first); `created_of` their times.
// starting_after lists what is older than its object, ending_before what is newer, the page
// nearest to it.
template <typename Iterator, typename CreatedOf>
Page select_page(Iterator first, Iterator last, CreatedOf created_of, const ListQuery& query,
                 std::optional<ObjectIndex> starting_after, std::optional<ObjectIndex> ending_before) {
  auto low =
      std::partition_point(first, last, [&](ObjectIndex index) { return created_of(index) < query.created_from; });
  auto high = std::partition_point(low, last, [&](ObjectIndex index) { return created_of(index) <= query.created_to; });
  auto limit = static_cast<std::ptrdiff_t>(query.limit);
  Page page;
  if (ending_before) {
    auto from = std::max(low, std::upper_bound(first, last, *ending_before));
    if (from >= high) return page;
    auto to = from + std::min(limit, static_cast<std::ptrdiff_t>(high - from));
    page.has_more = to < high;
    for (auto it = to; it != from;) page.newest_first.push_back(*--it);
    return page;
  }
  auto to = starting_after ? std::min(high, std::lower_bound(first, last, *starting_after)) : high;
  if (to <= low) return page;
  auto from = to - std::min(limit, static_cast<std::ptrdiff_t>(to - low));
  page.has_more = from > low;
  for (auto it = to; it != from;) page.newest_first.push_back(*--it);
  return page;
}

// Every record index of a collection, 0 to count - 1 (std::views::iota, which clang 14 cannot
// compile with libstdc++ 12's ranges algorithms).
std::pair<boost::counting_iterator<ObjectIndex>, boost::counting_iterator<ObjectIndex>> all_indexes(std::size_t count) {
  return {boost::counting_iterator<ObjectIndex>(0),
          boost::counting_iterator<ObjectIndex>(static_cast<ObjectIndex>(count))};
}

// An unknown cursor: a 400, not the 404 of an unknown id in the path (Stripe's answer).
http::Response no_such_cursor(std::string_view object, const std::string& id, std::string_view param_name) {
  return stripe_error(400, "invalid_request_error", "No such " + std::string(object) + ": '" + id + "'",
                      {.code = "resource_missing", .param = param_name});
}

http::Response both_cursors() {
  return stripe_error(400, "invalid_request_error",
                      "Received both starting_after and ending_before parameters. Please pass in only one.");
}

template <typename WriteObject>
http::Response list_object(const Page& page, std::string_view url, WriteObject write_object) {
  JsonWriter json;
  json.begin_object().string("object", "list").begin_array("data");
  for (auto index : page.newest_first) write_object(json, index);
  json.end_array().boolean("has_more", page.has_more).string("url", url).end_object();
  http::Response response;
  response.body = json.text();
  return response;
}

}  // namespace

http::Response Mock::list_charges(const ListQuery& query) {
  std::optional<ObjectIndex> starting_after, ending_before;
  if (query.starting_after && !(starting_after = ledger_.find_charge(*query.starting_after))) {
    return no_such_cursor("charge", *query.starting_after, "starting_after");
  }
  if (query.ending_before && !(ending_before = ledger_.find_charge(*query.ending_before))) {
    return no_such_cursor("charge", *query.ending_before, "ending_before");
  }
  if (starting_after && ending_before) return both_cursors();
  auto created_of = [this](ObjectIndex index) { return ledger_.charge(index).created; };
  Page page;
  if (query.owner) {
    // Stripe refuses a customer it does not know; here a customer is known once created or charged.
    auto charges = ledger_.charges_of(*query.owner);
    if (!charges) return no_such_cursor("customer", *query.owner, "customer");
    page = select_page(charges->begin(), charges->end(), created_of, query, starting_after, ending_before);
  } else {
    auto [first, last] = all_indexes(ledger_.charge_count());
    page = select_page(first, last, created_of, query, starting_after, ending_before);
  }
  return list_object(page, "/v1/charges", [this](JsonWriter& json, ObjectIndex index) {
    write_charge(json, ledger_, index, ChargeMoment::now);
  });
}

http::Response Mock::list_refunds(const ListQuery& query) {
  std::optional<ObjectIndex> starting_after, ending_before;
  if (query.starting_after && !(starting_after = ledger_.find_refund(*query.starting_after))) {
    return no_such_cursor("refund", *query.starting_after, "starting_after");
  }
  if (query.ending_before && !(ending_before = ledger_.find_refund(*query.ending_before))) {
    return no_such_cursor("refund", *query.ending_before, "ending_before");
  }
  if (starting_after && ending_before) return both_cursors();
  auto created_of = [this](ObjectIndex index) { return ledger_.refund(index).created; };
  Page page;
  if (query.owner) {
    auto charge = ledger_.find_charge(*query.owner);
    if (!charge) return no_such_cursor("charge", *query.owner, "charge");
    auto refunds = ledger_.refunds_of(*charge);
    page = select_page(refunds.begin(), refunds.end(), created_of, query, starting_after, ending_before);
  } else {
    auto [first, last] = all_indexes(ledger_.refund_count());
    page = select_page(first, last, created_of, query, starting_after, ending_before);
  }
  return list_object(page, "/v1/refunds",
                     [this](JsonWriter& json, ObjectIndex index) { write_refund(json, ledger_, index); });
}

}  // namespace rr::stripe_mock
