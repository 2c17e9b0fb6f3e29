// POST /v1/customers: a customer record, kept so GET /v1/customers/{id} finds it. Charges do not
// require their customer to exist here: riders' customer ids come from the real provider too.
#include "tools/stripe_mock/mock.hpp"
#include "tools/stripe_mock/objects.hpp"

namespace rr::stripe_mock {

Mock::Created Mock::create_customer(const Params& params, const std::string& idempotency_key) {
  if (auto refused = reject_unknown(params, {"description", "email", "name", "phone"})) return {*refused};
  auto metadata_or_error = metadata(params);
  if (auto* error = std::get_if<http::Response>(&metadata_or_error)) return {*error};

  auto index = ledger_.add_customer(Customer{
      .id = {},
      .idempotency_key = idempotency_key,
      .created = now_epoch(),
      .description = param(params, "description"),
      .email = param(params, "email"),
      .name = param(params, "name"),
      .phone = param(params, "phone"),
      .metadata = std::get<Metadata>(std::move(metadata_or_error)),
  });
  http::Response response;
  response.body = customer_json(ledger_.customer(index));
  return {std::move(response), index};
}

}  // namespace rr::stripe_mock
