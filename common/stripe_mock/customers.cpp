// POST /v1/customers: a customer record, kept so GET /v1/customers/{id} finds it. Charges do not
// require their customer to exist here: riders' customer ids come from the real provider too.
#include "common/stripe_mock/mock.hpp"

namespace rr::stripe_mock {

http::Response Mock::create_customer(const Params& params) {
  if (auto refused = reject_unknown(params, {"description", "email", "name", "phone"})) return *refused;
  auto metadata_or_error = metadata(params);
  if (auto* error = std::get_if<http::Response>(&metadata_or_error)) return *error;

  Customer& customer = customers_.emplace_back(Customer{
      .id = new_id("cus_", 14),
      .created = now_epoch(),
      .description = param(params, "description"),
      .email = param(params, "email"),
      .name = param(params, "name"),
      .phone = param(params, "phone"),
      .metadata = std::get<Metadata>(std::move(metadata_or_error)),
  });
  customers_by_id_.emplace(customer.id, &customer);
  http::Response response;
  response.body = to_json(customer);
  return response;
}

}  // namespace rr::stripe_mock
